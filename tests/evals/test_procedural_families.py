"""The procedural task families: schemas, determinism, rendering, exact answers, the verifier."""

from __future__ import annotations

import datetime
import itertools
import json
import time
from typing import Any

import jsonschema
import numpy as np
import pytest

from optiforge.evals.suites.procedural.families import (
    FAMILIES,
    Family,
    by_domain,
    instance,
    instances,
    verify,
)

SEEDS = range(30)
LEVELS = (1, 2, 3)
CASES = [(name, level) for name in FAMILIES for level in LEVELS]


def _lit(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """What ``jsonschema.validate`` does, less its per-call schema check (done once below)."""
    key = _lit(schema)
    if key not in _VALIDATORS:
        jsonschema.Draft202012Validator.check_schema(schema)
        _VALIDATORS[key] = jsonschema.Draft202012Validator(schema)
    return _VALIDATORS[key]


_VALIDATORS: dict[str, jsonschema.Draft202012Validator] = {}


def _floats(value: Any) -> list[Any]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for v in value.values() for f in _floats(v)]
    if isinstance(value, list | tuple):
        return [f for v in value for f in _floats(v)]
    return []


def _solve(name: str, **args: Any) -> Any:
    return FAMILIES[name].solve(args)


# ----------------------------------------------------------------------------- registry


def test_fifteen_families_split_by_domain() -> None:
    train, heldout, ood = by_domain("train"), by_domain("heldout"), by_domain("ood")
    assert (len(train), len(heldout), len(ood)) == (9, 4, 2)
    names = [f.name for f in train + heldout + ood]
    assert len(names) == len(set(names)) == len(FAMILIES) == 15
    assert {f.name for f in ood} == {"table_question", "scene_graph_count"}
    for name, fam in FAMILIES.items():
        assert isinstance(fam, Family) and fam.name == name
        assert name.isidentifier() and name == name.lower()
        assert fam.summary and "\n" not in fam.summary


def test_by_domain_rejects_an_unknown_domain_naming_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="test") as err:
        by_domain("test")
    assert all(d in str(err.value) for d in ("train", "heldout", "ood"))


def test_schemas_are_valid_json_schema() -> None:
    for fam in FAMILIES.values():
        for schema in [*fam.params.values(), fam.returns]:
            jsonschema.Draft202012Validator.check_schema(schema)
        json.dumps(fam.params)
        json.dumps(fam.returns)


def test_a_bad_level_is_refused() -> None:
    fam = FAMILIES["gcd_of_list"]
    for level in (0, 4):
        with pytest.raises(ValueError, match="level"):
            instance(fam, 0, level)
        with pytest.raises(ValueError, match="level"):
            instances(fam, 0, 2, level=level)


# ---------------------------------------------------------------------------- instances


@pytest.mark.parametrize(("name", "level"), CASES)
def test_generated_instances_are_well_formed(name: str, level: int) -> None:
    fam = FAMILIES[name]
    items = [instance(fam, seed, level) for seed in SEEDS]
    assert items[0] == instance(fam, 0, level)  # deterministic per seed
    assert len({_lit(it["args"]) for it in items}) >= 3  # and differs across seeds
    answers = set()
    for it in items:
        assert set(it) == {"args", "question", "answer", "level", "family"}
        assert it["level"] == level and it["family"] == name
        args, question, answer = it["args"], it["question"], it["answer"]
        assert list(args) == list(fam.params)
        for key, schema in fam.params.items():
            _validator(schema).validate(args[key])
        _validator(fam.returns).validate(answer)
        assert not _floats(args) and not _floats(answer)
        assert verify(json.loads(json.dumps(answer)), answer)  # JSON round trip
        assert json.loads(json.dumps(args)) == args
        pos = 0  # every argument literal appears, in params order
        for key in fam.params:
            found = question.find(_lit(args[key]), pos)
            assert found >= 0, (key, question)
            pos = found + len(_lit(args[key]))
        assert question.endswith("?") or "?" in question
        if isinstance(answer, str) and len(answer) >= 3:
            assert answer not in question
        assert verify(fam.solve(args), answer)
        answers.add(_lit(answer))
    assert len(answers) >= (2 if fam.returns.get("type") == "boolean" else 3), answers


@pytest.mark.parametrize("name", list(FAMILIES))
def test_level_three_is_bigger_than_level_one_and_solves_fast(name: str) -> None:
    fam = FAMILIES[name]

    def size(level: int) -> float:
        items = [instance(fam, seed, level) for seed in SEEDS]
        return float(np.mean([len(_lit(it["args"])) + len(_lit(it["answer"])) for it in items]))

    assert size(1) < size(3)
    for seed in range(8):
        args = instance(fam, seed, 3)["args"]
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            fam.solve(args)
            best = min(best, time.perf_counter() - start)
        assert best < 0.010, (name, best)


def test_instances_cycle_levels_are_deterministic_and_do_not_repeat() -> None:
    for fam in FAMILIES.values():
        batch = instances(fam, 5, 9)
        assert [it["level"] for it in batch] == [1, 2, 3] * 3
        assert batch == instances(fam, 5, 9)
        assert len({_lit(it["args"]) for it in batch}) == 9
        fixed = instances(fam, 5, 4, level=3)
        assert [it["level"] for it in fixed] == [3] * 4
        other = instances(fam, 6, 4, level=3)  # another seed: another stream, no overlap
        assert not {_lit(it["args"]) for it in fixed} & {_lit(it["args"]) for it in other}
    assert instances(FAMILIES["roman_numeral"], 0, 0) == []


def test_levels_change_the_draw() -> None:
    fam = FAMILIES["modular_power"]
    assert instance(fam, 3, 1)["args"] != instance(fam, 3, 3)["args"]
    assert instance(fam, 3, 1) != instance(FAMILIES["gcd_of_list"], 3, 1)


# ----------------------------------------------------------------------------- verifier


@pytest.mark.parametrize(
    ("answer", "expected", "ok"),
    [
        (6, 6, True),
        (6.0, 6, False),
        (6, 6.0, False),
        (True, 1, False),
        (1, True, False),
        (False, False, True),
        ("3", 3, False),
        (3, "3", False),
        ("12.50", "12.50", True),
        ("12.5", "12.50", False),
        (" 12.50", "12.50", False),
        ("MCMXCIV", "MCMXCIV", True),
        ("mcmxciv", "MCMXCIV", False),
        ([1, 2], [1, 2], True),
        ([1, 2], [2, 1], False),
        ([1, 2], [1, 2, 3], False),
        ([[1, 6], [8, 12]], [[1, 6], [8, 12]], True),
        ([[1, 6], [8, 12.0]], [[1, 6], [8, 12]], False),
        ({"a": 1, "b": [2]}, {"b": [2], "a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": 1, "b": 2}, {"a": 1}, False),
        ({"a": 1.0}, {"a": 1}, False),
        (None, None, True),
        (None, 0, False),
        ("6", 6, False),
        (np.int64(6), 6, False),
        ("the answer is 6", 6, False),
        ([1, 2], (1, 2), True),
    ],
)
def test_verify_is_strict(answer: Any, expected: Any, ok: bool) -> None:
    assert verify(answer, expected) is ok


# --------------------------------------------------------------- hand-checked answers


def test_hand_checked_train_answers() -> None:
    assert _solve("gcd_of_list", numbers=[12, 18, 30]) == 6
    assert _solve("gcd_of_list", numbers=[17, 34, 51, 85]) == 17
    assert _solve("gcd_of_list", numbers=[8, 27]) == 1
    assert _solve("modular_power", base=2, exponent=10, modulus=1000) == 24
    assert _solve("modular_power", base=3, exponent=0, modulus=7) == 1
    assert _solve("modular_power", base=7, exponent=222, modulus=1000) == pow(7, 222, 1000)
    assert _solve("base_conversion", n=255, base=16) == "ff"
    assert _solve("base_conversion", n=10, base=2) == "1010"
    assert _solve("base_conversion", n=0, base=7) == "0"
    assert _solve("base_conversion", n=100, base=9) == "121"
    assert _solve("count_primes_in_range", lo=1, hi=10) == 4
    assert _solve("count_primes_in_range", lo=10, hi=20) == 4
    assert _solve("count_primes_in_range", lo=0, hi=100) == 25
    assert _solve("count_primes_in_range", lo=7, hi=7) == 1
    assert _solve("run_length_encode", text="aaabcc") == "a3b1c2"
    assert _solve("run_length_encode", text="z" * 12 + "y") == "z12y1"
    assert _solve("balanced_brackets", brackets="([]{})") is True
    assert _solve("balanced_brackets", brackets="([)]") is False
    assert _solve("balanced_brackets", brackets="((") is False
    assert _solve("balanced_brackets", brackets="})") is False
    assert _solve("roman_numeral", n=1994) == "MCMXCIV"
    assert _solve("roman_numeral", n=3999) == "MMMCMXCIX"
    assert _solve("roman_numeral", n=4) == "IV"
    assert _solve("interval_merge", intervals=[[8, 10], [1, 3], [2, 6], [10, 12]]) == [
        [1, 6],
        [8, 12],
    ]
    assert _solve("interval_merge", intervals=[[1, 2], [3, 4], [0, 0]]) == [[0, 0], [1, 2], [3, 4]]
    assert _solve("interval_merge", intervals=[[1, 10], [2, 3]]) == [[1, 10]]
    assert _solve("days_between_dates", start="2024-02-28", end="2024-03-01") == 2
    assert _solve("days_between_dates", start="2023-02-28", end="2023-03-01") == 1
    assert _solve("days_between_dates", start="2000-01-01", end="1999-12-31") == -1
    assert _solve("days_between_dates", start="1900-01-01", end="2000-01-01") == 36524


def test_hand_checked_heldout_answers() -> None:
    lcs = "longest_common_subsequence_length"
    assert _solve(lcs, a="abcbdab", b="bdcaba") == 4
    assert _solve(lcs, a="abc", b="def") == 0
    assert _solve(lcs, a="", b="abc") == 0
    edges = [[0, 1, 1], [1, 2, 2], [0, 2, 5], [2, 3, 1]]
    assert _solve("shortest_path_length", n=4, edges=edges, source=0, target=3) == 4
    assert _solve("shortest_path_length", n=4, edges=edges, source=3, target=0) == 4
    assert _solve("shortest_path_length", n=5, edges=edges, source=0, target=4) == -1
    knap = "knapsack_max_value"
    assert _solve(knap, weights=[1, 3, 4, 5], values=[1, 4, 5, 7], capacity=7) == 9
    assert _solve(knap, weights=[5], values=[10], capacity=4) == 0
    det = "matrix_determinant"
    assert _solve(det, matrix=[[2, 0], [1, 3]]) == 6
    assert _solve(det, matrix=[[1, 2, 3], [4, 5, 6], [7, 8, 10]]) == -3
    assert _solve(det, matrix=[[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]) == -1
    assert _solve(det, matrix=[[1, 2], [2, 4]]) == 0
    assert _solve(det, matrix=[[7]]) == 7


def test_hand_checked_ood_answers() -> None:
    table = [["item", "price"], ["apple", "0.75"], ["pear", "1.20"], ["kite", "12.05"]]
    assert _solve("table_question", table=table, purchases=[["apple", 3], ["pear", 2]]) == "4.65"
    assert _solve("table_question", table=table, purchases=[["kite", 10]]) == "120.50"
    objects = [
        {"id": 0, "shape": "cube", "color": "red", "size": "small"},
        {"id": 1, "shape": "sphere", "color": "blue", "size": "large"},
        {"id": 2, "shape": "sphere", "color": "red", "size": "small"},
        {"id": 3, "shape": "cube", "color": "red", "size": "large"},
    ]
    relations = [
        [0, "left_of", 1],
        [1, "right_of", 0],
        [2, "left_of", 1],
        [1, "right_of", 2],
        [0, "left_of", 2],
        [2, "right_of", 0],
        [3, "on_top_of", 1],
        [0, "behind", 2],
    ]

    def count(color: Any, shape: Any, relation: Any, anchor: Any) -> Any:
        query = {"color": color, "shape": shape, "relation": relation, "anchor_id": anchor}
        return _solve("scene_graph_count", objects=objects, relations=relations, query=query)

    assert count("red", None, "left_of", 1) == 2
    assert count("red", "cube", "left_of", 1) == 1
    assert count(None, None, "right_of", 0) == 2
    assert count(None, "cube", "on_top_of", 1) == 1
    assert count("red", None, None, None) == 3
    assert count("green", None, None, None) == 0
    assert count(None, None, None, None) == 4


# ------------------------------------------------------------- cross-checked answers


def test_generated_answers_match_independent_methods() -> None:
    def is_prime(k: int) -> bool:
        return k >= 2 and all(k % d for d in range(2, int(k**0.5) + 1))

    for seed in range(10):
        for level in (1, 2):
            a = instance(FAMILIES["count_primes_in_range"], seed, level)
            lo, hi = a["args"]["lo"], a["args"]["hi"]
            assert a["answer"] == sum(is_prime(k) for k in range(lo, hi + 1))

            k = instance(FAMILIES["knapsack_max_value"], seed, level)
            w, v, cap = k["args"]["weights"], k["args"]["values"], k["args"]["capacity"]
            brute = max(
                sum(v[i] for i in subset)
                for r in range(len(w) + 1)
                for subset in itertools.combinations(range(len(w)), r)
                if sum(w[i] for i in subset) <= cap
            )
            assert k["answer"] == brute

        for level in LEVELS:
            d = instance(FAMILIES["matrix_determinant"], seed, level)
            assert d["answer"] == round(np.linalg.det(np.array(d["args"]["matrix"], float)))

            p = instance(FAMILIES["shortest_path_length"], seed, level)
            n = p["args"]["n"]
            dist = np.full((n, n), np.inf)
            np.fill_diagonal(dist, 0)
            for u, x, wt in p["args"]["edges"]:
                dist[u, x] = dist[x, u] = min(dist[u, x], wt)
            for m in range(n):  # Floyd-Warshall
                dist = np.minimum(dist, dist[:, m : m + 1] + dist[m : m + 1, :])
            best = dist[p["args"]["source"], p["args"]["target"]]
            assert p["answer"] == (-1 if np.isinf(best) else int(best))

            r = instance(FAMILIES["interval_merge"], seed, level)
            covered = {x for lo, hi in r["args"]["intervals"] for x in range(lo, hi + 1)}
            assert covered == {x for lo, hi in r["answer"] for x in range(lo, hi + 1)}
            assert all(b[0] > a[1] for a, b in itertools.pairwise(r["answer"]))

            t = instance(FAMILIES["days_between_dates"], seed, level)
            days = datetime.date.fromisoformat(t["args"]["end"]).toordinal()
            assert t["answer"] == days - datetime.date.fromisoformat(t["args"]["start"]).toordinal()


def test_shortest_paths_are_sometimes_unreachable_and_brackets_sometimes_balanced() -> None:
    paths = [instance(FAMILIES["shortest_path_length"], s, 1)["answer"] for s in range(60)]
    assert -1 in paths and any(p > 0 for p in paths)
    for level in LEVELS:
        got = {instance(FAMILIES["balanced_brackets"], s, level)["answer"] for s in SEEDS}
        assert got == {True, False}


def test_scene_relations_are_consistent() -> None:
    fam = FAMILIES["scene_graph_count"]
    for seed in SEEDS:
        for level in LEVELS:
            args = instance(fam, seed, level)["args"]
            ids = [o["id"] for o in args["objects"]]
            assert sorted(ids) == list(range(len(ids)))
            facts = {tuple(r) for r in args["relations"]}
            assert len(facts) == len(args["relations"])
            for s, rel, o in facts:
                assert s != o and s in ids and o in ids
                if rel == "left_of":
                    assert (o, "right_of", s) in facts and (o, "left_of", s) not in facts
                if rel == "right_of":
                    assert (o, "left_of", s) in facts
                if rel in ("behind", "on_top_of"):
                    assert (o, rel, s) not in facts
            for a, b, c in itertools.permutations(ids, 3):  # the listed order is transitive
                for rel in ("left_of", "behind"):
                    if (a, rel, b) in facts and (b, rel, c) in facts:
                        assert (a, rel, c) in facts
            query = args["query"]
            assert (query["relation"] is None) == (query["anchor_id"] is None)


def test_price_tables_are_exact_money() -> None:
    fam = FAMILIES["table_question"]
    for seed in SEEDS:
        for level in LEVELS:
            args = instance(fam, seed, level)["args"]
            assert args["table"][0] == ["item", "price"]
            names = [row[0] for row in args["table"][1:]]
            assert len(names) == len(set(names))
            for _, price in args["table"][1:]:
                whole, frac = price.split(".")
                assert whole.isdigit() and len(frac) == 2 and frac.isdigit()
            assert all(item in names and qty >= 1 for item, qty in args["purchases"])
