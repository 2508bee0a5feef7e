"""The replay stage: the seven-action environment, the baseline policies and shortcut probes, LLM agents, and
the runner that writes a run folder (run.json, steps.jsonl, trajectories.jsonl)."""
