"""``posttrain run``'s pieces on a tiny random model (no download, seconds): the SFT loss
covers the assistant's tokens only, HALO SFT lowers the loss, the held-out split is stable,
the verified GRPO reward ranks replies, and GRPO runs a step with it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from optiforge.errors import ConfigError
from optiforge.harness.posttrain.train import (
    IGNORE,
    PostTrainConfig,
    TrainRow,
    VerifiedReward,
    encode,
    encode_rows,
    heldout_loss,
    is_heldout,
    load_rows,
    split_heldout,
)

_MISSING = [
    m for m in ("torch", "transformers", "trl", "datasets") if importlib.util.find_spec(m) is None
]
needs_extra = pytest.mark.skipif(
    bool(_MISSING), reason=f"needs the posttrain extra (missing: {', '.join(_MISSING)})"
)
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _row(i: int, reply: str, agent: str = "evolve") -> TrainRow:
    msgs = [{"role": "system", "content": "Answer with the number."},
            {"role": "user", "content": f"What is {i} plus {i}?"},
            {"role": "assistant", "content": reply}]  # fmt: skip
    import hashlib

    rid = hashlib.sha256(json.dumps(msgs).encode()).hexdigest()
    return TrainRow(id=rid, agent=agent, format="text", task="suite/t", messages=msgs)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Path]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from optiforge.agents.smith.grpo import tiny_model

    path = tiny_model(tmp_path_factory.mktemp("tiny") / "m", seed=0)
    tok = AutoTokenizer.from_pretrained(str(path))
    tok.chat_template = CHATML
    tok.save_pretrained(str(path))
    model = AutoModelForCausalLM.from_pretrained(str(path))
    return model, tok, path


def test_heldout_split_is_stable_and_about_a_tenth() -> None:
    import hashlib

    ids = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(4000)]
    share = sum(map(is_heldout, ids)) / len(ids)
    assert 0.085 < share < 0.115
    assert [is_heldout(i) for i in ids] == [is_heldout(i) for i in ids]
    assert is_heldout("not-hex-at-all") in (True, False)  # hashed, not an error


def test_load_rows_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no training data"):
        load_rows(tmp_path)
    (tmp_path / "train.jsonl").write_text('{"id": "x"}\n')
    with pytest.raises(ConfigError, match="train.jsonl:1: not a training row"):
        load_rows(tmp_path)
    row = _row(1, "2").model_dump()
    row["messages"] = row["messages"][:-1]
    (tmp_path / "train.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(ConfigError, match="last message must be the assistant"):
        load_rows(tmp_path)


def test_config_refuses_unknown_keys() -> None:
    with pytest.raises(ValueError, match="extra"):
        PostTrainConfig.model_validate({"sft_step": 3})


@needs_extra
def test_loss_covers_only_the_reply(tiny: tuple[Any, Any, Path]) -> None:
    _, tok, _ = tiny
    row = _row(3, "six, which is 6")
    ids, labels = encode(tok, row.messages)
    assert len(ids) == len(labels)
    kept = [t for t, lab in zip(ids, labels, strict=True) if lab != IGNORE]
    assert tok.decode(kept) == "six, which is 6<|im_end|>\n"
    first = labels.index(next(x for x in labels if x != IGNORE))
    assert tok.decode(ids[:first]).endswith("<|im_start|>assistant\n")
    assert all(x == IGNORE for x in labels[:first])


@needs_extra
def test_encode_rows_skips_rows_over_the_limit(tiny: tuple[Any, Any, Path]) -> None:
    _, tok, _ = tiny
    rows = [_row(1, "2"), _row(2, "four " * 200)]
    kept, skipped = encode_rows(tok, rows, max_tokens=120)
    assert (len(kept), skipped) == (1, 1)


@needs_extra
@pytest.mark.parametrize("steps", [0, 60])
def test_halo_sft_lowers_the_reply_loss(tiny: tuple[Any, Any, Path], steps: int) -> None:
    """60 HALO steps on 8 rows lower their reply loss by over 15%; 0 steps (the
    stand-in that trains nothing) leave it where it was."""
    import copy

    from optiforge.harness.posttrain.train import run_sft

    model, tok, _ = tiny
    model = copy.deepcopy(model)
    rows = [_row(i, f"{2 * i} is the sum of {i} and {i}") for i in range(8)]
    examples, _ = encode_rows(tok, rows, 256)
    before = heldout_loss(model, examples)
    assert before is not None
    log: list[dict[str, Any]] = []
    if steps:
        cfg = PostTrainConfig(sft_steps=steps, sft_batch=4, sft_lr=1e-2)
        got = run_sft(model, tok, examples, cfg, log.append)
        assert got["steps"] == steps and len(log) == steps
        assert log[0]["active_blocks"] <= log[-1]["active_blocks"]  # top-down unfreezing
        assert not model.model.embed_tokens.weight.requires_grad  # tied embeddings stayed put
    after = heldout_loss(model, examples)
    assert after is not None
    if steps:
        assert after < 0.85 * before, (before, after)  # measured: 6.25 -> 4.80
    else:
        assert after == pytest.approx(before)


class _Verdict:
    def __init__(self, valid: bool, score: float | None = None) -> None:
        self.valid, self.score, self.detail = valid, score, ""


def _verify(agent: str, task: str, messages: list[dict[str, Any]], reply: str) -> _Verdict:
    """Stand-in for verify_reply: a reply is valid when it is an integer; its score is it."""
    try:
        return _Verdict(True, float(int(reply.strip())))
    except ValueError:
        return _Verdict(False)


@pytest.mark.parametrize("direction", [1.0, -1.0, None])
def test_verified_reward_validity_then_rank(direction: float | None) -> None:
    reward = VerifiedReward(_verify, direction=lambda task: direction)
    prompt = [{"role": "user", "content": "a number"}]
    got = reward([prompt] * 4, ["3", "oops", "10", "1"], agent=["a"] * 4, task=["s/t"] * 4)
    assert got[1] == 0.0 and all(g >= 1.0 for i, g in enumerate(got) if i != 1)
    if direction is None:
        assert got == [1.0, 0.0, 1.0, 1.0]
    elif direction > 0:
        assert got == [1.25, 0.0, 1.5, 1.0]
    else:
        assert got == [1.25, 0.0, 1.0, 1.5]
    assert (reward.calls, reward.valid) == (4, 3)


def test_verified_reward_treats_a_crashing_check_as_invalid() -> None:
    def boom(*a: Any) -> Any:
        raise RuntimeError("sandbox died")

    assert VerifiedReward(boom, direction=lambda t: 1.0)(
        [[]], ["1"], agent=["a"], task=["s/t"]
    ) == [0.0]


@needs_extra
@pytest.mark.slow
def test_grpo_on_verified_rewards_runs_and_saves(
    tiny: tuple[Any, Any, Path], tmp_path: Path
) -> None:
    from optiforge.harness.posttrain.train import run_rl_agents

    _, _, path = tiny
    rows = [_row(i, str(2 * i)) for i in range(4)]
    cfg = PostTrainConfig(rl_generations=2, rl_completion_tokens=8, max_tokens=256)
    log: list[dict[str, Any]] = []
    got = run_rl_agents(path, tmp_path, rows, cfg, 1, _verify, log.append)
    assert got["steps"] == 1 and got["verdicts"] == 2 and len(log) == 1
    assert (tmp_path / "model" / "config.json").is_file()


def test_split_heldout_partitions(tmp_path: Path) -> None:
    rows = [_row(i, str(i)) for i in range(50)]
    train, held = split_heldout(rows)
    assert len(train) + len(held) == 50 and not {r.id for r in train} & {r.id for r in held}


def test_resume_refuses_a_finished_phase_with_other_settings_or_data(tmp_path: Path) -> None:
    from optiforge.harness.posttrain.train import RunState

    cfg = PostTrainConfig(sft_steps=10, rl_steps=0)
    state = RunState(tmp_path)
    state.check(cfg, "sha-a")
    state.finish("sft", {"steps": 10})
    again = RunState(tmp_path)  # from state.json
    assert again.done("sft") == {"steps": 10}
    again.check(cfg.model_copy(update={"rl_steps": 6}), "sha-a")  # a later phase may change
    with pytest.raises(ConfigError, match="phase sft is done with other settings"):
        RunState(tmp_path).check(cfg.model_copy(update={"sft_steps": 20}), "sha-a")
    with pytest.raises(ConfigError, match="other data"):
        RunState(tmp_path).check(cfg, "sha-b")
