"""How much of an archive a package may rest on one thing, and how much a policy or an annotator is shown: one
frozen value a compile passes down (compile_package(caps=...)), never module globals changed in place."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Caps:
    fact: int = 2  # tasks resting on one gold fact (DESIGN §7): a defect, a changelog statement, a gap, a subject
    menu: int = 6  # entries of a task's menu: the binding items, then distractors
    pool: int = 12  # items an annotator may choose distractors from (the binding items come on top)


DEFAULT = Caps()
