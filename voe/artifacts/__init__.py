"""The artifact contract every stage reads and writes (dbt's `artifacts` idea): the task package (package), a run
folder (run), the scores of a run (scores) and the verifier's three checks in Python (verdict), each with its
version (voe/versions.py) and reader. It imports no stage, so the compiler, the replayer, the verifiers, export
and the agents share one definition of each file."""
