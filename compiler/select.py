"""Which candidate packets become tasks (DESIGN §4, §7): one decision per subject, at most two tasks per fact of
the archive, every defect kept, and the rest chosen so that no cheap rule answers the package.

1. Defects. Every packet that rests on a defect (a flag, an escalation) is kept, the item's own task first,
   until the defect carries `caps.fact` tasks (compiler/caps.py): a real defect is never dropped for balance.
2. The rest, in this order of preference, each subject once and each fact at most `caps.fact` times:
   - packets a rule cannot answer from an item's status or looks: a stated rename (the name is unavailable, the
     content is not), a calibration the question leaves to the agent, a stated correction (two release hashes
     that disagree and are fine);
   - a contrast in each workflow with a defect: a clean subject that this copy holds or does not hold as it
     holds the defective one, of the same kind of file where there is one (whether our copy holds the bytes,
     or the extension, must not tell a flag from a submission);
   - the gaps (a stated removal, a file a checksum file attests and the record lacks);
   - hard negatives (a platform alias of a media type, a BOM: they look odd and are fine), a workflow at a time,
     workflows with no task first; then one subject of every other workflow in turn; then the rest.
3. Adversarial filtering (as SWAG and AFLite build benchmarks: drop what a cheap model solves). Every rule
   probe of the release gate (replay/probes.py, the null baselines) is replayed on each candidate once, with
   the template's framing, and so are the constant classifiers (always one class, with the payload that class
   takes: the floor of every text classifier, held to the text limit); a candidate joins the package only while
   no probe would be right on more than its limit of the package, or, while one is over it, only when it brings
   that excess down. So a clean packet
   that every status rule answers waits until packets those rules get wrong are in, and an archive that holds
   only such packets yields no task (the gate says why) rather than a benchmark a rule passes.

Ties within a tier are broken by a hash of the subject: deterministic, and not by anything a policy could order by.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable

from voe.artifacts.package import Action
from voe.compiler.admission import MARGIN, PROBE_LIMIT, TEXT_LIMIT, Solver
from voe.compiler.caps import DEFAULT, Caps
from voe.compiler.catalog import Catalog, extension, h, held, looks_odd
from voe.compiler.families import Moment, priority_order


def budgeted(m: Moment) -> bool:
    """A clean submission: the reference submits the packet the question names (its subject among it)."""
    return m.reference_class == Action.SUBMIT_RISK_PACKET and m.subject in m.reference_payload


def is_defect(m: Moment) -> bool:
    return m.reference_class in (Action.FLAG_SOURCE_DEFECT, Action.ABSTAIN_OR_ESCALATE)


class _Picker:
    def __init__(self, caps: Caps) -> None:
        self.caps = caps
        self.used: set[str] = set()
        self.uses: Counter[str] = Counter()
        self.kept: list[Moment] = []

    def fits(self, m: Moment) -> bool:
        return m.subject not in self.used and all(self.uses[f] < self.caps.fact for f in m.gold_facts)

    def why_not(self, m: Moment) -> str:
        if m.subject in self.used:
            return "its subject is another task's (one subject, one task)"
        full = [f for f in m.gold_facts if self.uses[f] >= self.caps.fact]
        return f"its fact carries {self.caps.fact} tasks already ({full[0]})"

    def keep(self, m: Moment) -> None:
        self.used.add(m.subject)
        self.uses.update(set(m.gold_facts))
        self.kept.append(m)


def limit(probe: str) -> float:
    """What selection holds a probe to: its gate limit less the margin."""
    return (TEXT_LIMIT if probe.startswith("always:") else PROBE_LIMIT) - MARGIN


class _Filter:
    """The probes' tally over the package as it grows, and the acceptance rule of adversarial filtering."""

    def __init__(self, solve: Solver) -> None:
        self.solve = solve
        self.n = 0
        self.right: Counter[str] = Counter()

    def excess(self, n: int, right: Counter[str]) -> float:
        return sum(max(0.0, r - limit(p) * n) for p, r in right.items())

    def admits(self, m: Moment) -> bool:
        after = self.right + Counter(self.solve(m))
        now, then = self.excess(self.n, self.right), self.excess(self.n + 1, after)
        return then == 0 or then < now

    def over(self, m: Moment) -> list[str]:
        """The probes right on `m` that it would take past their selection limit."""
        return sorted(p for p in self.solve(m) if self.right[p] + 1 > limit(p) * (self.n + 1))

    def add(self, m: Moment) -> None:
        self.n += 1
        self.right.update(self.solve(m))


def select(candidates: list[Moment], cat: Catalog, solve: Solver, caps: Caps = DEFAULT,
           refused: dict[str, str] | None = None, key: Callable[[Moment], str] = lambda m: m.subject) -> list[Moment]:
    """The packets that become tasks (module docstring). `refused` gets, by `key`, each candidate the
    adversarial filter kept out at its last try, with the probes whose limit it would have passed."""
    order = {f: i for i, f in enumerate(priority_order())}
    blocked: dict[str, str] = {}
    pick = _Picker(caps)
    tally = _Filter(solve)

    def by_shape(ms: list[Moment]) -> list[Moment]:
        """A subject's packets in an order fixed by the subject alone (a hash): what a packet rests on (the words
        "together with ...") must not tell its class, and a subject is framed the same way whatever else is
        compiled beside it."""
        return sorted(ms, key=lambda m: h("shape", m.subject, m.shape))

    def keep(m: Moment) -> None:
        pick.keep(m)
        tally.add(m)

    defect_subjects: dict[str, list[Moment]] = defaultdict(list)
    for m in candidates:
        if is_defect(m):
            defect_subjects[m.subject].append(m)
    first = {s: min((order[m.family], h("fact", s)) for m in ms) for s, ms in defect_subjects.items()}
    for s in sorted(defect_subjects, key=first.__getitem__):
        best = min(order[m.family] for m in defect_subjects[s])
        for m in by_shape([m for m in defect_subjects[s] if order[m.family] == best]):
            if pick.fits(m):
                keep(m)
                break
            blocked.setdefault(key(m), pick.why_not(m))
    defective = list(pick.kept)

    def clean_support(m: Moment) -> bool:
        return not any(cat.own_defects.get(x) for x in [*m.support, *m.calibrators] if x != m.subject)

    by_subject: dict[str, list[Moment]] = defaultdict(list)
    for m in sorted((m for m in candidates if not is_defect(m) and (not budgeted(m) or clean_support(m))),
                    key=lambda m: (m.shape != "calibration", h("shape", m.subject, m.shape))):
        by_subject[m.subject].append(m)
    def own(s: str) -> bool:
        """A fact about this very item (a stale checksum file of it): its own task comes before the packets that
        rest on it."""
        return any(f.endswith(f":{s}") for m in by_subject[s] for f in m.gold_facts if f.startswith("resolved:"))

    subjects = sorted(by_subject, key=lambda s: (not own(s), h("subject", s)))

    def take(ss: list[str]) -> bool:
        """The first packet of these subjects that fits and that the filter admits."""
        for s in ss:
            for m in by_shape(by_subject[s]):
                if not pick.fits(m):
                    blocked.setdefault(key(m), pick.why_not(m))
                    continue
                if tally.admits(m):
                    keep(m)
                    blocked.pop(key(m), None)
                    return True
                over = tally.over(m)
                blocked[key(m)] = ", ".join(_short(p) for p in over[:3]) + (
                    f" and {len(over) - 3} more" if len(over) > 3 else "") + \
                    f" would pass {MARGIN:.0%} under its limit"
        return False

    def hard(s: str) -> bool:
        return any(not budgeted(m) and m.reference_class == Action.SUBMIT_RISK_PACKET or m.shape == "calibration"
                   or cat.rows[s].get("release_status") == "changed" for m in by_subject[s])

    def gap(s: str) -> bool:
        return any(m.reference_class == Action.LOCALIZE_MISSING_EVIDENCE for m in by_subject[s])

    def contrasts(a: Moment) -> list[str]:
        same = [s for s in subjects if s not in pick.used and cat.workflow_of[s] == a.workflow and not gap(s)
                and held(cat, s) == held(cat, a.subject)]
        return sorted(same, key=lambda s: (extension(cat, s) != extension(cat, a.subject), not looks_odd(cat, s)))

    def covered_last(ss: list[str]) -> list[str]:
        covered = {m.workflow for m in pick.kept}
        return sorted(ss, key=lambda s: cat.workflow_of[s] in covered)

    for _ in range(3):  # later packets can make room for earlier ones: a few rounds until nothing changes
        before = len(pick.kept)
        for s in [s for s in subjects if hard(s)]:
            take([s])
        contrasted = {m.workflow for m in pick.kept if budgeted(m)}
        for a in defective:
            if a.workflow not in contrasted and take(contrasts(a)):
                contrasted.add(a.workflow)
        _round_robin([s for s in subjects if gap(s)], cat, pick.used, take, once=False)
        odd = [s for s in subjects if looks_odd(cat, s)]
        _round_robin(covered_last(odd), cat, pick.used, take, once=True)
        _round_robin(covered_last(subjects), cat, pick.used, take, once=True)
        for a in defective:
            take(contrasts(a))
        _round_robin(subjects, cat, pick.used, take, once=False)
        if len(pick.kept) == before:
            break
    if refused is not None:
        kept = {key(m) for m in pick.kept}
        refused.update({k: v for k, v in sorted(blocked.items()) if k not in kept})
    return pick.kept


def _short(probe: str) -> str:
    return probe.replace("rules:", "rules ").replace("always:", "always ")


def _round_robin(subjects: list[str], cat: Catalog, used: set[str], take: Callable[[list[str]], bool],
                 once: bool) -> None:
    """One subject per workflow in turn (workflows in the order their first subject comes); `once`: a single
    round, one subject for each workflow that has one."""
    queues: dict[str, list[str]] = defaultdict(list)
    for s in subjects:
        queues[cat.workflow_of[s]].append(s)
    while True:
        progressed = False
        for queue in queues.values():
            while queue:
                s = queue.pop(0)
                if s not in used and take([s]):
                    progressed = True
                    break
        if once or not progressed:
            return

