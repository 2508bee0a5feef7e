"""Classifiers an adversary would train to answer tasks without judgment (DESIGN §7), from scikit-learn, scored by
cross-validation over the package's own tasks: each predicts a task's terminal class from what a policy sees,
and the gate replays that class with the payload it takes (replay/probes.py `predicted`).

- structure: no words, only shape: whether this copy holds the subject's bytes, the subject's file extension,
  evidence kind and declared media type, the subject's provenance as a policy sees it (a file, a folder, a
  release-note item, a workbook row), the menu's size, the subject's position on it, the menu's kinds and how
  many of its items are unavailable, and the question's template (support named or not, a calibration left to
  the agent); one-hot; a random forest, gradient boosting and a logistic regression.
- text: the question and the menu's kinds and titles as TF-IDF (words and word pairs, sublinear term frequency);
  a nearest neighbour by cosine and a logistic regression.

Folds: leave-one-workflow-out (tasks of one workflow share items, naming and an archive's habits, so a
classifier must carry what it learned to a workflow it has not seen: the figure the gate holds to its limit; the
versions of one archive are one workflow here) and
leave-one-task-out (near-twins of one workflow on both sides; recorded beside it). Deterministic: fixed random
states, no parallelism, and logistic regressions solved to their optimum (Newton-CG, which is unique): a stochastic
solver stopped early gave a recorded figure that moved by a task on another machine, and the release-gate page
is compared byte for byte.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from voe.artifacts.clusters import lineage
from voe.artifacts.package import EvidenceObject, TaskView
from voe.artifacts.question import CALIBRATION, read

NO_NEIGHBOUR = "abstain_or_escalate"  # what a classifier with nothing to learn from says (a package of one fold)
CLASSES = ("submit_risk_packet", "flag_source_defect", "localize_missing_evidence", "abstain_or_escalate")
FOLDS = {"lowo": "workflow", "loto": "task"}  # row-name suffix -> what a fold holds out
MAX_TERMS = 5000  # the words and word pairs a text classifier weighs: the most frequent of its training tasks
Model = Callable[[], Any]  # a fresh, unfitted scikit-learn estimator


def folds(views: Sequence[TaskView], by: str) -> list[str]:
    """A task's fold: its workflow, the versions of one archive together (voe/artifacts/clusters.py `lineage`), or
    the task alone."""
    return [lineage(v.workflow_id) for v in views] if by == "workflow" else [v.task_id for v in views]


def cross_validate(views: Sequence[TaskView], labels: Sequence[str], by: str, x: Any, model: Model) -> dict[str, str]:
    """Each task's class predicted by `model` fitted on the tasks of the other folds."""
    fold = folds(views, by)
    out: dict[str, str] = {}
    for f in sorted(set(fold)):
        test = [i for i, g in enumerate(fold) if g == f]
        train = [i for i, g in enumerate(fold) if g != f]
        classes = sorted({labels[i] for i in train})
        if not train:
            predicted = [NO_NEIGHBOUR] * len(test)
        elif len(classes) == 1:  # one class to learn: every estimator says it
            predicted = [classes[0]] * len(test)
        else:
            est = model()
            with warnings.catch_warnings():  # a fold's fit that stops at its iteration cap still predicts
                warnings.simplefilter("ignore", category=UserWarning)
                warnings.simplefilter("ignore", category=RuntimeWarning)
                try:
                    from sklearn.exceptions import ConvergenceWarning

                    warnings.simplefilter("ignore", category=ConvergenceWarning)
                except ImportError:  # pragma: no cover - scikit-learn always has it
                    pass
                est.fit(x[train], [labels[i] for i in train])
            predicted = [str(c) for c in est.predict(x[test])]
        for i, cls in zip(test, predicted, strict=True):
            out[views[i].task_id] = cls
    return out


def text_of(view: TaskView) -> str:
    return " ".join([view.question, *(f"{e.kind} {e.title}" for e in view.menu)])


def subject_entry(view: TaskView) -> int | None:
    """The menu position of the item the packet is on (the question parsed exactly, artifacts/question.py)."""
    subject = read(view).subject
    return next((k for k, e in enumerate(view.menu) if e.evidence_id == subject), None)


def _held(obs: EvidenceObject | None) -> str:
    if obs is None or obs.status != "archived":
        return obs.status if obs is not None else "none"
    meta = obs.metadata
    if "members" not in meta and "path" not in meta:
        return "row" if "sheet" in meta else "listed"
    files = meta.get("members") if "members" in meta else [meta]
    flags = [bool(f.get("held")) for f in files or []]
    return "held" if flags and all(flags) else "partly" if any(flags) else "not_held"


def structure_features(view: TaskView, evidence: dict[str, EvidenceObject]) -> dict[str, str]:
    """What a policy that pulls everything knows of a task without reading a word of it."""
    k = subject_entry(view)
    entry = view.menu[k] if k is not None else None
    obs = evidence.get(entry.evidence_id) if entry else None
    meta: dict[str, Any] = obs.metadata if obs is not None else {}
    path = str(meta.get("path") or (meta.get("members") or [{}])[0].get("path") or (entry.title if entry else ""))
    name = path.split(" (", 1)[0].rsplit("/", 1)[-1]
    media = meta.get("media_type") or ((meta.get("members") or [{}])[0].get("media_type"))
    reading = read(view)
    unavailable = sum(1 for e in view.menu
                      if (o := evidence.get(e.evidence_id)) is not None and o.status == "unavailable")
    return {"held": _held(obs), "extension": name.rsplit(".", 1)[-1].lower() if "." in name else "",
            "kind": entry.kind if entry else "", "media_type": str(media or ""), "menu": str(len(view.menu)),
            "position": str(k), "kinds": ",".join(sorted({e.kind for e in view.menu})),
            "folder": str("members" in meta), "provenance": str(obs.provenance or "") if obs is not None else "",
            "unavailable": str(unavailable), "support": str(len(reading.support)),
            "calibration": str(reading.calibration or CALIBRATION in view.question)}


def _onehot(rows: Sequence[dict[str, str]]) -> Any:
    from sklearn.feature_extraction import DictVectorizer

    return DictVectorizer(sparse=False).fit_transform([{f"{k}={v}": 1 for k, v in r.items()} for r in rows])


def _logreg() -> Any:
    """A logistic regression solved to its unique optimum (the module's note says why)."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(solver="newton-cg", max_iter=1000, tol=1e-6)


def structure_probes(views: Sequence[TaskView], labels: Sequence[str],
                     evidence: dict[str, EvidenceObject]) -> dict[str, dict[str, str]]:
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    x = _onehot([structure_features(v, evidence) for v in views])
    models: dict[str, Model] = {
        # sized so that leave-one-task-out (a fit per task) stays seconds on a package of a few hundred tasks
        "forest": lambda: RandomForestClassifier(n_estimators=40, random_state=0, n_jobs=1),
        "boosting": lambda: GradientBoostingClassifier(n_estimators=30, random_state=0),
        "logreg": _logreg,
    }
    return {f"structure_{name}_{suffix}": cross_validate(views, labels, by, x, model)
            for suffix, by in FOLDS.items() for name, model in models.items()}


def text_matrix(views: Sequence[TaskView]) -> Any:
    """The tasks' words as TF-IDF rows. The vocabulary and its weights come from every task's words (no label is
    read): the held-out task's words are known to the adversary, as they would be to one who holds the package."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), max_features=MAX_TERMS).fit_transform(
        [text_of(v) for v in views])


def text_models() -> dict[str, Model]:
    from sklearn.neighbors import KNeighborsClassifier

    return {
        "tfidf_nn": lambda: KNeighborsClassifier(n_neighbors=1, metric="cosine", algorithm="brute"),
        "tfidf_logreg": _logreg,
    }


def text_probes(views: Sequence[TaskView], labels: Sequence[str]) -> dict[str, dict[str, str]]:
    """The text classifiers over text_matrix, each fold in FOLDS."""
    x = text_matrix(views)
    return {f"{name}_{suffix}": cross_validate(views, labels, by, x, model)
            for suffix, by in FOLDS.items() for name, model in text_models().items()}
