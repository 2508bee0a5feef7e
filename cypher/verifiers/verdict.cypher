// Not a query: the three checks of DESIGN §6 for one trajectory, which verify_trajectories (a run the graph holds)
// and write_trajectories (a run as its batches are written) include by name (voe/queries.py), so that both verify
// with the same text. In: tr (a Trajectory), t (the Task it attempts), ans (its Answer), pulled (the ids of the evidence
// it REQUESTED). Out, beside every variable it came with: action_valid, payload_bound, grounded.
// (1) action valid: the terminal class is one the task accepts;
// (2) payload bound: every payload id is evidence the trajectory actually requested, the payload names
//     what that class must be bound to (the defective item for a flag, the missing item for a localize,
//     the packet for a submit), and nothing beyond what the class may name (strict payloads: a flag names
//     defective items only, a localize missing items only, a submit exactly the packet);
// (3) grounded: everything the reference needs to justify its class was requested.
// The terminal step is read from the trajectory's step lists (graph_verify refuses a run whose summary's class and
// payload are not its terminal step's, so tr.payload is that step's payload).
WITH *, [i IN range(0, size(tr.step_outcome) - 1) WHERE tr.step_outcome[i] = 'terminal' | tr.step_action[i]] AS ended
WITH *, ended <> [] AS terminal, ended[0] AS action,
     CASE WHEN ended <> [] THEN coalesce(tr.payload, []) ELSE [] END AS payload
WITH *,
     CASE action
       WHEN 'flag_source_defect' THEN ans.must_bind_flag_source_defect
       WHEN 'localize_missing_evidence' THEN ans.must_bind_localize_missing_evidence
       WHEN 'submit_risk_packet' THEN ans.must_bind_submit_risk_packet
       ELSE [] END AS must,
     CASE action
       WHEN 'flag_source_defect' THEN ans.may_bind_flag_source_defect
       WHEN 'localize_missing_evidence' THEN ans.may_bind_localize_missing_evidence
       WHEN 'submit_risk_packet' THEN ans.may_bind_submit_risk_packet
       ELSE NULL END AS may
WITH *,
     terminal AND action IN ans.accepted_classes AS action_valid,
     terminal
       AND all(p IN payload WHERE p IN pulled)
       AND all(b IN coalesce(must, []) WHERE b IN payload)
       AND (may IS NULL OR all(p IN payload WHERE p IN may)) AS payload_bound,
     all(n IN ans.needed WHERE n IN pulled) AS grounded
