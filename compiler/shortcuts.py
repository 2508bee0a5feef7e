"""Classifiers an adversary would train to answer tasks without judgment, scored by cross-validation over the
package's own tasks (DESIGN §7): each predicts a task's terminal class from what a policy sees, and the gate
replays that class with the payload it takes (replay/probes.py `predicted`).

- text: the question and the menu's kinds and titles, as TF-IDF vectors (words and word pairs, sublinear term
  frequency, l2-normalised); a nearest neighbour by cosine, and a multinomial logistic regression.
- metadata: only structure, no words: whether this copy holds the subject's bytes, the subject's file
  extension, its evidence kind and declared media type, the menu's size and the subject's position on it, and
  the kinds on the menu; one-hot features, the same logistic regression, and a categorical naive Bayes.

Folds: leave-one-workflow-out (tasks of one workflow share items, naming and an archive's habits, so their
neighbours come from other workflows) and a 5-fold split by a hash of the task id (near-twins of one workflow
on both sides; the harder limit). Deterministic: no random state, a fixed number of gradient steps from zero.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from voe.artifacts.package import EvidenceObject, TaskView

WORD = re.compile(r"[a-z0-9]+")
FOLDS = 5
NO_NEIGHBOUR = "abstain_or_escalate"
CLASSES = ("submit_risk_packet", "flag_source_defect", "localize_missing_evidence", "abstain_or_escalate")
Predictor = Callable[[list[int], list[int]], list[str]]  # (train rows, test rows) -> classes of the test rows


def folds(views: Sequence[TaskView], by: str) -> list[str]:
    if by == "workflow":
        return [v.workflow_id for v in views]
    return [str(int(hashlib.sha256(v.task_id.encode()).hexdigest(), 16) % FOLDS) for v in views]


def cross_validate(views: Sequence[TaskView], labels: Sequence[str], by: str, fit: Predictor) -> dict[str, str]:
    """Each task's class predicted by `fit` trained on the tasks of the other folds."""
    fold = folds(views, by)
    out: dict[str, str] = {}
    for f in sorted(set(fold)):
        test = [i for i, x in enumerate(fold) if x == f]
        train = [i for i, x in enumerate(fold) if x != f]
        # one fold alone (a package of one workflow) leaves nothing to learn from: the same default as text_nn
        predicted = fit(train, test) if train else [NO_NEIGHBOUR] * len(test)
        for i, cls in zip(test, predicted, strict=True):
            out[views[i].task_id] = cls
    return out


def _tokens(text: str) -> list[str]:
    words = WORD.findall(text.lower())
    return words + [f"{a}_{b}" for a, b in zip(words, words[1:], strict=False)]


def text_of(view: TaskView) -> str:
    return " ".join([view.question, *(f"{e.kind} {e.title}" for e in view.menu)])


def tfidf(docs: Sequence[list[str]], train: Sequence[int]) -> np.ndarray:
    """TF-IDF rows for every document, the vocabulary and document frequencies from `train` only."""
    df: Counter[str] = Counter()
    for i in train:
        df.update(set(docs[i]))
    vocab = {t: k for k, t in enumerate(sorted(df))}
    n = len(train)
    idf = np.array([math.log((1 + n) / (1 + df[t])) + 1.0 for t in sorted(df)])
    out = np.zeros((len(docs), len(vocab)))
    for i, doc in enumerate(docs):
        for t, c in Counter(doc).items():
            if t in vocab:
                out[i, vocab[t]] = 1.0 + math.log(c)
    out *= idf
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(norms == 0, 1.0, norms)


def nearest(x: np.ndarray, labels: Sequence[str], tie: Sequence[str]) -> Predictor:
    """The class of the most similar training row (cosine; ties broken by task id)."""
    def fit(train: list[int], test: list[int]) -> list[str]:
        out = []
        for i in test:
            best = max(train, key=lambda j: (round(float(x[i] @ x[j]), 12), tie[j]))
            out.append(labels[best])
        return out
    return fit


def logistic(x: np.ndarray, labels: Sequence[str], l2: float = 1.0, steps: int = 300) -> Predictor:
    """Multinomial logistic regression with an L2 penalty, by full-batch gradient descent from zero."""
    def fit(train: list[int], test: list[int]) -> list[str]:
        classes = sorted({labels[j] for j in train})
        if len(classes) == 1:
            return [classes[0]] * len(test)
        xt = np.hstack([x[train], np.ones((len(train), 1))])
        y = np.zeros((len(train), len(classes)))
        for r, j in enumerate(train):
            y[r, classes.index(labels[j])] = 1.0
        w = np.zeros((xt.shape[1], len(classes)))
        lr = 1.0
        for _ in range(steps):
            z = xt @ w
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(axis=1, keepdims=True)
            grad = xt.T @ (p - y) / len(train) + l2 * w / len(train)
            w -= lr * grad
        xs = np.hstack([x[test], np.ones((len(test), 1))])
        scores = xs @ w
        return [classes[int(np.argmax(row))] for row in scores]
    return fit


def naive_bayes(features: Sequence[dict[str, str]], labels: Sequence[str]) -> Predictor:
    """Categorical naive Bayes with add-one smoothing over each feature's values."""
    def fit(train: list[int], test: list[int]) -> list[str]:
        prior = Counter(labels[j] for j in train)
        counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        values: dict[str, set[str]] = defaultdict(set)
        for j in train:
            for k, v in features[j].items():
                counts[(labels[j], k)][v] += 1
                values[k].add(v)
        def score(c: str, row: dict[str, str]) -> float:
            s = math.log(prior[c] / len(train))
            for k, v in row.items():
                s += math.log((counts[(c, k)][v] + 1) / (prior[c] + len(values[k]) + 1))
            return s

        return [max(sorted(prior), key=lambda c: score(c, features[i])) for i in test]
    return fit


def one_hot(features: Sequence[dict[str, str]]) -> np.ndarray:
    keys = sorted({f"{k}={v}" for f in features for k, v in f.items()})
    index = {k: i for i, k in enumerate(keys)}
    out = np.zeros((len(features), len(keys)))
    for r, f in enumerate(features):
        for k, v in f.items():
            out[r, index[f"{k}={v}"]] = 1.0
    return out


def subject_entry(view: TaskView) -> int | None:
    """The menu position of the item the packet is on (the first menu title after "A risk packet on")."""
    start = view.question.find("A risk packet on")
    hits = [(view.question.find(e.title, start), k) for k, e in enumerate(view.menu)
            if e.title and view.question.find(e.title, start) >= 0]
    return min(hits)[1] if hits else None


def _held(obs: EvidenceObject | None) -> str:
    if obs is None or obs.status != "archived":
        return obs.status if obs is not None else "none"
    meta = obs.metadata
    files = meta.get("members") if "members" in meta else [meta]
    flags = [bool(f.get("held")) for f in files or []]
    return "held" if flags and all(flags) else "partly" if any(flags) else "not_held"


def metadata_features(view: TaskView, evidence: dict[str, EvidenceObject]) -> dict[str, str]:
    """What a policy that pulls everything knows of a task without reading a word of it."""
    k = subject_entry(view)
    entry = view.menu[k] if k is not None else None
    obs = evidence.get(entry.evidence_id) if entry else None
    meta: dict[str, Any] = obs.metadata if obs is not None else {}
    path = str(meta.get("path") or (meta.get("members") or [{}])[0].get("path") or (entry.title if entry else ""))
    name = path.rsplit("/", 1)[-1]
    media = meta.get("media_type") or ((meta.get("members") or [{}])[0].get("media_type"))
    return {"held": _held(obs), "extension": name.rsplit(".", 1)[-1].lower() if "." in name else "",
            "kind": entry.kind if entry else "", "media_type": str(media or ""), "menu": str(len(view.menu)),
            "position": str(k), "kinds": ",".join(sorted({e.kind for e in view.menu})),
            "folder": str("members" in meta)}


def text_probes(views: Sequence[TaskView], labels: Sequence[str]) -> dict[str, dict[str, str]]:
    docs = [_tokens(text_of(v)) for v in views]
    tie = [v.task_id for v in views]
    out: dict[str, dict[str, str]] = {}
    for by, suffix in (("workflow", ""), ("random", "_5fold")):
        def nn(train: list[int], test: list[int]) -> list[str]:
            return nearest(tfidf(docs, train), labels, tie)(train, test)

        def lr(train: list[int], test: list[int]) -> list[str]:
            return logistic(tfidf(docs, train), labels)(train, test)
        out[f"tfidf_nn{suffix}"] = cross_validate(views, labels, by, nn)
        out[f"tfidf_logreg{suffix}"] = cross_validate(views, labels, by, lr)
    return out


def metadata_probes(views: Sequence[TaskView], labels: Sequence[str],
                    evidence: dict[str, EvidenceObject]) -> dict[str, dict[str, str]]:
    features = [metadata_features(v, evidence) for v in views]
    x = one_hot(features)
    out: dict[str, dict[str, str]] = {}
    for by, suffix in (("workflow", ""), ("random", "_5fold")):
        out[f"metadata_logreg{suffix}"] = cross_validate(views, labels, by, logistic(x, labels))
        out[f"metadata_bayes{suffix}"] = cross_validate(views, labels, by, naive_bayes(features, labels))
    return out
