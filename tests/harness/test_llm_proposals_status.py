"""The harness's one rule for an LLM run none of whose proposals was valid (issue 42):
fed by each agent's count (``AgentOutcome.llm_proposals``), whatever the agent says."""

from __future__ import annotations

from optiforge.agents.kit import Evaluated, SearchResult, search_outcome
from optiforge.harness.status import llm_proposals_failure, run_status


def test_all_invalid_llm_proposals_fail_the_run() -> None:
    assert run_status(1.0, "evaluation budget spent", None, {"made": 12, "valid": 0}) == (
        "failed",
        "0 of 12 LLM proposals were valid: the result owes nothing to the model",
    )
    assert (
        run_status(1.0, "evaluation budget spent", None, {"made": 12, "valid": 1})[0] == "finished"
    )
    assert llm_proposals_failure({"made": 0, "valid": 0}) is None  # the model never proposed
    assert llm_proposals_failure(None) is None  # the agent does not count
    # the agent's own verdict, when it has one, is the reason
    assert run_status(1.0, "x", "no tool passed", {"made": 3, "valid": 0}) == (
        "failed",
        "no tool passed",
    )


def test_search_outcome_counts_llm_proposals_only_for_an_llm() -> None:
    seed = Evaluated(id="s", key="k", payload={}, round=0, passed=True, value=1.0)
    good = Evaluated(id="g", key="g", payload={}, round=1, passed=True, value=0.5)
    miss = Evaluated(id="m", key="", payload={}, round=1, error="invalid: no code")
    result = SearchResult(best=good, history=[seed, good, miss], population=[seed, good],
                          n_evaluations=2, n_duplicates=0, n_invalid=1, rounds=2,
                          stop_reason="max rounds reached")  # fmt: skip
    llm = search_outcome(result, proposer="p", higher_is_better=False, llm=True)
    assert llm.llm_proposals == {"made": 2, "valid": 1}
    assert (
        search_outcome(result, proposer="p", higher_is_better=False, llm=False).llm_proposals
        is None
    )
