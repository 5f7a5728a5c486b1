"""``optiforge posttrain run``: SFT with HALO, then GRPO with sandbox-verified rewards, then
a GGUF file the local server loads.

Phases (each ends with a Hugging Face checkpoint ``OUT/<phase>/model`` and a line in
``OUT/state.json``; a rerun with the same ``OUT`` skips finished phases, so a crash loses
at most the phase it happened in):

1. ``sft``: supervised fine-tuning of the shipped SmolLM2-135M-Instruct (dequantized from
   its Q4_1 GGUF, ``weights.load_gguf``) on ``train.jsonl`` (contract 2) with
   ``optiforge.solvers.halo.train``: rows are chat-templated with the model's own template,
   the loss is the cross-entropy on the assistant's tokens only; blocks are
   ``model.model.layers`` (input to output), the head is ``model.model.norm`` only.
   SmolLM2 ties ``lm_head`` to ``embed_tokens``: training that head would make every step
   back-propagate through all blocks to the embeddings (HALO's cheap early phases lost)
   and move the input embeddings of all 49k tokens on a few hundred rows, so it stays
   frozen (``PostTrainConfig.train_head`` turns it on).
2. ``rl-smith``: SMITH's GRPO (``optiforge.agents.smith.grpo.train``: the schema, code and
   outcome rewards on build and use rollouts of the dev families) from the SFT model.
3. ``rl-agents``: GRPO (TRL) on the other agents' training prompts; the reward of a reply
   is part B's ``verify_reply`` (the same check that admitted the data): 1 when valid,
   plus up to 0.5 for its rank by score among the valid replies of its group (ranks, not
   raw scores: tasks' metrics have different scales and directions).
4. ``export``: q8_0 GGUF through llama.cpp's converter, a JSON card beside it (base
   model, data file and sha256, steps per phase, CPU minutes, peak RSS, seed, held-out
   loss before and after), and a sanity check: llama.cpp serves the file and answers a
   held-out training-format prompt.

A row is held out of training when the first 8 hex digits of its ``id`` (a sha256), read
as a number, are 0 modulo 10 (10% of the rows, the same rows whatever the seed): the
held-out loss and the sanity check use them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import resource
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from optiforge.errors import ConfigError
from optiforge.harness.posttrain.weights import (
    base_gguf,
    export_gguf,
    load_gguf,
    require_extra,
    save_hf,
)

PHASES = ("sft", "rl-smith", "rl-agents", "export")
STATE = "state.json"
MODEL_DIR = "model"
_SFT_FIELDS = {
    "sft_steps",
    "sft_batch",
    "sft_lr",
    "method",
    "train_head",
    "max_tokens",
    "eval_rows",
    "seed",
}
_RL_FIELDS = {"rl_lr", "rl_generations", "rl_completion_tokens", "max_tokens", "seed"}
PHASE_FIELDS: dict[str, set[str]] = {
    "sft": _SFT_FIELDS,
    "rl-smith": _SFT_FIELDS
    | _RL_FIELDS
    | {"rl_steps", "smith_share", "smith_bench", "smith_episodes"},
    "rl-agents": _SFT_FIELDS | _RL_FIELDS | {"rl_steps", "smith_share"},
}
"""The settings each phase's result depends on (a resume may change the others)."""
HELDOUT_MOD = 10
"""A row is held out when its id (a sha256) read as a number is 0 modulo this (10%)."""
IGNORE = -100


class PostTrainConfig(BaseModel):
    """What ``posttrain run`` does. The defaults are sized from the measured run (90 SFT
    steps of 1 row ~470 tokens: 8.4 CPU-minutes; a GRPO step 0.4-1.2 CPU-minutes): about
    28 + 10 CPU-minutes, under an hour on 2 cores."""

    model_config = ConfigDict(extra="forbid")

    sft_steps: int = Field(default=150, ge=0)
    """HALO optimizer steps (0: skip SFT)."""
    sft_batch: int = Field(default=2, ge=1)
    """Rows per SFT step (padded together)."""
    sft_lr: float = Field(default=5e-5, gt=0)
    method: Literal["halo", "full", "blockwise"] = "halo"
    """HALO, or one of its baselines."""
    train_head: bool = False
    """Also train ``lm_head`` (tied to the input embeddings in SmolLM2; see the module doc)."""
    rl_steps: int = Field(default=8, ge=0)
    """GRPO steps in all; split between SMITH and the other agents by ``smith_share``."""
    smith_share: float = Field(default=0.5, ge=0.0, le=1.0)
    rl_lr: float = Field(default=1e-6, gt=0)
    rl_generations: int = Field(default=4, ge=2)
    """Completions per prompt (GRPO's group)."""
    rl_completion_tokens: int = Field(default=200, ge=8)
    """Longest completion (SMITH's tools take ~110-210 tokens)."""
    smith_bench: str = "procedural/train-families"
    smith_episodes: int = Field(default=2, ge=1)
    max_tokens: int = Field(default=768, ge=32)
    """Longest SFT sequence (prompt + reply, in tokens); longer rows are skipped, and RL
    prompts longer than this too."""
    eval_rows: int = Field(default=48, ge=1)
    """Held-out rows the loss is measured on (at most)."""
    seed: int = 0
    outtype: Literal["q8_0", "f16", "f32", "bf16"] = "q8_0"


class TrainRow(BaseModel):
    """One row of ``train.jsonl`` (contract 2); unknown keys are kept out of the way."""

    model_config = ConfigDict(extra="ignore")

    id: str
    agent: str
    format: str = ""
    task: str
    messages: list[dict[str, str]]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_rows(data_dir: str | Path) -> tuple[Path, list[TrainRow]]:
    """``(DIR/train.jsonl, its rows)``; a one-line ConfigError for a missing or bad file."""
    path = Path(data_dir) / "train.jsonl"
    if not path.is_file():
        raise ConfigError(
            f"no training data at {str(path)!r} (make it with optiforge posttrain data)"
        )
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = TrainRow.model_validate_json(line)
        except ValueError as e:
            raise ConfigError(
                f"{path}:{n}: not a training row ({str(e).splitlines()[0]})"
            ) from None
        if not row.messages or row.messages[-1].get("role") != "assistant":
            raise ConfigError(f"{path}:{n}: the last message must be the assistant's reply")
        rows.append(row)
    if not rows:
        raise ConfigError(f"{path} holds no rows")
    return path, rows


def is_heldout(row_id: str) -> bool:
    """Whether a row is held out (see the module doc; a non-hex id is hashed first)."""
    head = row_id[:8].lower()
    if len(head) < 8 or any(c not in "0123456789abcdef" for c in head):
        head = hashlib.sha256(row_id.encode()).hexdigest()[:8]
    return int(head, 16) % HELDOUT_MOD == 0


def split_heldout(rows: list[TrainRow]) -> tuple[list[TrainRow], list[TrainRow]]:
    """``(train, heldout)`` (see ``is_heldout``)."""
    return [r for r in rows if not is_heldout(r.id)], [r for r in rows if is_heldout(r.id)]


def encode(tokenizer: Any, messages: list[dict[str, str]]) -> tuple[list[int], list[int]]:
    """``(input_ids, labels)`` of a chat-templated conversation whose last message is the
    assistant's: labels are ``-100`` on every token but the reply's (and its end token)."""
    prompt = tokenizer.apply_chat_template(messages[:-1], tokenize=True, add_generation_prompt=True)
    full = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=False)
    prompt, full = _ids(prompt), _ids(full)
    if full[: len(prompt)] != prompt:
        raise ConfigError("the chat template does not extend the prompt with the reply")
    return full, [IGNORE] * len(prompt) + full[len(prompt) :]


def _ids(x: Any) -> list[int]:
    if isinstance(x, dict) or hasattr(x, "input_ids"):  # a BatchEncoding in transformers 5
        x = x["input_ids"]
    return [int(i) for i in x]


def encode_rows(
    tokenizer: Any, rows: list[TrainRow], max_tokens: int
) -> tuple[list[tuple[list[int], list[int]]], int]:
    """The rows that fit in ``max_tokens`` encoded, and how many did not fit."""
    out, skipped = [], 0
    for r in rows:
        ids, labels = encode(tokenizer, r.messages)
        if len(ids) > max_tokens:
            skipped += 1
            continue
        out.append((ids, labels))
    return out, skipped


def collate(examples: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, Any]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``labels`` (``b x n``)."""
    import torch

    n = max(len(ids) for ids, _ in examples)
    ids = torch.full((len(examples), n), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), n), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(examples), n), dtype=torch.long)
    for i, (x, y) in enumerate(examples):
        ids[i, : len(x)] = torch.tensor(x)
        labels[i, : len(y)] = torch.tensor(y)
        mask[i, : len(x)] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def sft_batches(
    examples: list[tuple[list[int], list[int]]], batch: int, pad_id: int, seed: int
) -> Iterator[dict[str, Any]]:
    """Endless batches: a fresh shuffle per epoch; rows of similar length share a batch
    (less padding: sorted within windows of 8 batches)."""
    rng = random.Random(seed)
    while True:
        order = list(range(len(examples)))
        rng.shuffle(order)
        window = batch * 8
        for w in range(0, len(order), window):
            chunk = sorted(order[w : w + window], key=lambda i: len(examples[i][0]))
            groups = [chunk[i : i + batch] for i in range(0, len(chunk), batch)]
            rng.shuffle(groups)
            for g in groups:
                yield collate([examples[i] for i in g], pad_id)


def sft_loss(model: Any) -> Callable[[dict[str, Any]], Any]:
    """Mean cross-entropy over the batch's assistant tokens (transformers shifts labels)."""

    def loss_fn(batch: dict[str, Any]) -> Any:
        return model(**batch).loss

    return loss_fn


def heldout_loss(model: Any, examples: list[tuple[list[int], list[int]]]) -> float | None:
    """Token-weighted mean cross-entropy on the reply tokens of ``examples`` (no grad)."""
    import torch

    if not examples:
        return None
    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for ids, labels in examples:
            b = collate([(ids, labels)], 0)
            n = int((b["labels"][:, 1:] != IGNORE).sum())
            total += float(model(**b).loss) * n
            count += n
    model.train(was_training)
    return total / count if count else None


class Meter:
    """CPU seconds (this process and its finished children: sandboxes, the converter) and
    peak RSS, per phase."""

    def __init__(self) -> None:
        self.c0 = self.cpu()

    @staticmethod
    def cpu() -> float:
        s, c = (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

    def minutes(self) -> float:
        return round((self.cpu() - self.c0) / 60.0, 3)

    @staticmethod
    def peak_rss_mb() -> dict[str, float]:
        s, c = (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
        return {"self": round(s.ru_maxrss / 1024, 1), "largest_child": round(c.ru_maxrss / 1024, 1)}


class RunState:
    """``OUT/state.json``: finished phases with their results (written atomically)."""

    def __init__(self, out: Path) -> None:
        self.path = out / STATE
        self.data: dict[str, Any] = json.loads(self.path.read_text()) if self.path.is_file() else {}
        self.data.setdefault("phases", {})

    def check(self, config: PostTrainConfig, data_sha: str) -> None:
        """Refuse to resume over finished phases that another configuration or other data
        made; a later phase may change (more GRPO steps on the same SFT checkpoint).
        Records ``config`` and ``data_sha`` for the next resume."""
        old, now = self.data.get("config"), config.model_dump()
        if self.data.get("data_sha256") not in (None, data_sha) and self.data["phases"]:
            raise ConfigError(f"{self.path.parent} holds a run on other data: use a new --out")
        if isinstance(old, dict):
            changed = {k for k in now if old.get(k) != now[k]}
            for phase in PHASES[:-1]:
                if self.done(phase) is not None and changed & PHASE_FIELDS[phase]:
                    raise ConfigError(f"{self.path.parent}: phase {phase} is done with other settings "
                                      f"({', '.join(sorted(changed & PHASE_FIELDS[phase]))}): use a new --out")  # fmt: skip
        self.data["config"], self.data["data_sha256"] = now, data_sha

    def done(self, phase: str) -> dict[str, Any] | None:
        got = self.data["phases"].get(phase)
        return got if isinstance(got, dict) else None

    def finish(self, phase: str, result: dict[str, Any]) -> None:
        self.data["phases"][phase] = result
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str))
        os.replace(tmp, self.path)


def _save_checkpoint(model: Any, tokenizer: Any, dest: Path) -> Path:
    """Write an HF checkpoint to ``dest`` atomically (a temp dir, then a rename)."""
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    save_hf(model, tokenizer, tmp)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return dest


def _load_hf(path: Path) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        str(path), local_files_only=True, dtype=torch.float32
    )
    return model, tok


# ---------------------------------------------------------------------------- SFT


def run_sft(
    model: Any,
    tokenizer: Any,
    train: list[tuple[list[int], list[int]]],
    config: PostTrainConfig,
    log: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """HALO SFT of ``model`` in place; returns ``{"steps", "losses", "final_loss"}``."""
    from optiforge.solvers.halo import HaloConfig, StepInfo
    from optiforge.solvers.halo import train as halo_train

    if not train:
        raise ConfigError("no training row fits in --max-tokens: raise it")
    for p in model.parameters():  # the embeddings stay frozen (see the module doc)
        p.requires_grad_(False)
    head = [model.model.norm] + ([model.lm_head] if config.train_head else [])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    model.train()

    def on_step(info: StepInfo) -> None:
        log({"phase": "sft", "step": info.step + 1, "loss": round(info.loss, 4), "t": round(info.t, 3),
             "active_blocks": info.active_blocks, "cpu_s": round(info.cpu_seconds, 2)})  # fmt: skip

    result = halo_train(
        sft_loss(model),
        sft_batches(train, config.sft_batch, pad, config.seed),
        blocks=list(model.model.layers),
        head=head,
        steps=config.sft_steps,
        method=config.method,
        lr=config.sft_lr,
        config=HaloConfig(),
        on_step=on_step,
        seed=config.seed,
    )
    model.eval()
    return {"steps": result.steps, "losses": [round(h.loss, 4) for h in result.history],
            "final_loss": result.final_loss}  # fmt: skip


# ---------------------------------------------------------------------------- RL


Verify = Callable[[str, str, list[dict[str, Any]], str], Any]


def _direction(task: str) -> float | None:
    """+1 when the task's metric is higher-is-better, -1 when lower, None when unknown."""
    try:
        from optiforge.evals.registry import resolve_task

        t = resolve_task(task)
    except Exception:  # noqa: BLE001 - an unknown task just gets no score bonus
        return None
    hib = getattr(t, "higher_is_better", None)
    return None if hib is None else (1.0 if hib else -1.0)


class VerifiedReward:
    """A TRL reward function: 1 for a reply ``verify`` finds valid, 0 otherwise, plus up to
    0.5 for its rank by score (in the task's direction) among the valid replies to the same
    prompt. ``calls``/``valid`` count the verdicts."""

    __name__ = "verified_reward"

    def __init__(
        self, verify: Verify, direction: Callable[[str], float | None] = _direction
    ) -> None:
        self.verify = verify
        self.direction = direction
        self._dirs: dict[str, float | None] = {}
        self.calls = 0
        self.valid = 0

    def __call__(self, prompts: list[Any], completions: list[Any], **kw: Any) -> list[float]:
        from optiforge.agents.smith.grpo import completion_text

        n = len(completions)
        agents, tasks = kw.get("agent") or [""] * n, kw.get("task") or [""] * n
        rewards, keyed = [0.0] * n, []
        for i, c in enumerate(completions):
            prompt = (
                prompts[i]
                if isinstance(prompts[i], list)
                else [{"role": "user", "content": str(prompts[i])}]
            )
            try:
                v = self.verify(agents[i], tasks[i], prompt, completion_text(c))
            except Exception as e:  # noqa: BLE001 - a crash in a check is an invalid reply
                v = None
                _ = e
            self.calls += 1
            if v is None or not bool(getattr(v, "valid", False)):
                continue
            self.valid += 1
            rewards[i] = 1.0
            score = getattr(v, "score", None)
            if tasks[i] not in self._dirs:
                self._dirs[tasks[i]] = self.direction(tasks[i])
            d = self._dirs[tasks[i]]
            if score is not None and d is not None and math.isfinite(float(score)):
                keyed.append((json.dumps(prompt, sort_keys=True), d * float(score), i))
        groups: dict[str, list[tuple[float, int]]] = {}
        for key, s, i in keyed:
            groups.setdefault(key, []).append((s, i))
        for members in groups.values():
            if len(members) < 2:
                continue
            ordered = sorted(members)
            for rank, (_, i) in enumerate(ordered):
                rewards[i] += 0.5 * rank / (len(ordered) - 1)
        return rewards


def _grpo_config(out: Path, steps: int, config: PostTrainConfig) -> Any:
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=config.rl_generations,  # one prompt's group per step
        num_generations=config.rl_generations,
        max_completion_length=config.rl_completion_tokens,
        learning_rate=config.rl_lr,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        save_strategy="no",
        seed=config.seed,
        data_seed=config.seed,
        disable_tqdm=True,
    )


def run_rl_agents(
    model_dir: Path,
    out: Path,
    rows: list[TrainRow],
    config: PostTrainConfig,
    steps: int,
    verify: Verify,
    log: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """GRPO on the non-SMITH rows' prompts with ``VerifiedReward``; writes ``out/model``."""
    import warnings

    from datasets import Dataset
    from transformers import PrinterCallback, ProgressCallback, TrainerCallback
    from trl import GRPOTrainer

    model, tok = _load_hf(model_dir)
    prompts = []
    for r in rows:
        p = r.messages[:-1]
        n = len(_ids(tok.apply_chat_template(p, tokenize=True, add_generation_prompt=True)))
        if n <= config.max_tokens:
            prompts.append({"prompt": p, "agent": r.agent, "task": r.task})
    if not prompts:
        raise ConfigError("no non-SMITH training prompt fits in --max-tokens")
    random.Random(config.seed).shuffle(prompts)
    model.model.embed_tokens.weight.requires_grad_(False)  # as in SFT: embeddings stay put
    reward = VerifiedReward(verify)
    history: list[dict[str, Any]] = []

    class _Log(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                entry = {"phase": "rl-agents", "step": state.global_step, "loss": logs.get("loss"),
                         "reward": logs.get("reward"), "valid": f"{reward.valid}/{reward.calls}"}  # fmt: skip
                history.append(entry)
                log(entry)

    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning
        )
        funcs: list[Any] = [reward]  # TRL's annotation wants list[float | None] back
        trainer = GRPOTrainer(model=model, reward_funcs=funcs, args=_grpo_config(out, steps, config),
                              train_dataset=Dataset.from_list(prompts), processing_class=tok)  # fmt: skip
        for cb in (PrinterCallback, ProgressCallback):
            trainer.remove_callback(cb)
        trainer.add_callback(_Log())
        trainer.train()
    _save_checkpoint(trainer.model, tok, out / MODEL_DIR)
    return {"steps": trainer.state.global_step, "prompts": len(prompts), "log": history,
            "verdicts": reward.calls, "valid": reward.valid}  # fmt: skip


def run_rl_smith(
    model_dir: Path,
    out: Path,
    config: PostTrainConfig,
    steps: int,
    log: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    """SMITH's GRPO (``agents.smith.grpo.train``) from ``model_dir``; writes ``out/model``."""
    from optiforge.agents.smith.grpo import LOG_KEYS
    from optiforge.agents.smith.grpo import train as smith_train
    from optiforge.evals.registry import resolve_task

    task = resolve_task(config.smith_bench)

    def on_step(entry: dict[str, Any]) -> None:
        log({"phase": "rl-smith", "step": entry.get("step"), "loss": entry.get("loss"),
             **{ax: entry.get(k) for ax, k in LOG_KEYS.items()}})  # fmt: skip

    result = smith_train(task, str(model_dir), out, steps=steps, episodes=config.smith_episodes,
                         seed=config.seed, num_generations=config.rl_generations,
                         max_completion_length=config.rl_completion_tokens,
                         learning_rate=config.rl_lr, on_step=on_step)  # fmt: skip
    return {"steps": result["steps"], "sandbox_runs": result["sandbox_runs"],
            "log": [{k: e.get(k) for k in ("step", "loss", *LOG_KEYS.values())}
                    for e in result["log"] if "loss" in e]}  # fmt: skip


# ---------------------------------------------------------------------------- export


def sanity_check(
    gguf: Path, row: TrainRow, verify: Verify | None, max_tokens: int = 160
) -> dict[str, Any]:
    """llama.cpp (1 thread) serves ``gguf`` and answers ``row``'s prompt greedily: the
    reply, whether it is non-empty, and ``verify``'s verdict on it."""
    from llama_cpp import Llama

    llm = Llama(str(gguf), n_threads=1, n_ctx=2048, verbose=False, seed=0)
    try:
        messages: Any = row.messages[:-1]
        got = llm.create_chat_completion(messages=messages, max_tokens=max_tokens, temperature=0.0)
    finally:
        llm.close()
    reply = str(got["choices"][0]["message"]["content"] or "")  # type: ignore[index]
    out: dict[str, Any] = {"agent": row.agent, "task": row.task, "format": row.format,
                           "reply": reply[:600], "nonempty": bool(reply.strip())}  # fmt: skip
    if verify is not None:
        try:
            v = verify(row.agent, row.task, row.messages[:-1], reply)
            out["valid"], out["detail"] = bool(v.valid), str(getattr(v, "detail", ""))[:300]
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            out["verify_error"] = str(e)[:300]
    return out


def _default_verify() -> Verify | None:
    try:
        from optiforge.harness.posttrain.data import verify_reply
    except ImportError:
        return None
    return verify_reply  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- the run


def run(
    data_dir: str | Path,
    out_dir: str | Path,
    config: PostTrainConfig | None = None,
    *,
    gguf_out: str | Path | None = None,
    verify: Verify | None = None,
    base: str | Path | None = None,
    echo: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The whole post-training run (see the module doc); returns the card.

    Args:
        gguf_out: the GGUF file to write (default ``OUT/model.<outtype>.gguf``); the card is
            written beside it (``X.gguf`` -> ``X.json``).
        verify: the RL reward's check (default: part B's ``verify_reply``).
        base: the GGUF to start from (default: the shipped SmolLM2-135M-Instruct Q4_1).
    """
    require_extra()
    import torch

    config = config or PostTrainConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    verify = verify or _default_verify()
    data_file, rows = load_rows(data_dir)
    train_rows, held_rows = split_heldout(rows)
    base_file = Path(base) if base is not None else base_gguf()
    state = RunState(out)
    data_sha = _sha256(data_file)
    state.check(config, data_sha)
    log_path = out / "log.jsonl"

    def log(entry: dict[str, Any]) -> None:
        with log_path.open("a") as f:
            f.write(json.dumps(entry, default=str) + "\n")
        echo("  ".join(f"{k} {v}" for k, v in entry.items() if v is not None))

    smith_steps = round(config.rl_steps * config.smith_share)
    agent_rows = [r for r in train_rows if r.agent != "smith"]
    agent_steps = config.rl_steps - smith_steps if agent_rows and verify is not None else 0
    echo(f"data {data_file}: {len(rows)} rows ({len(train_rows)} train, {len(held_rows)} held out); "
         f"plan: sft {config.sft_steps} ({config.method}), rl-smith {smith_steps}, rl-agents {agent_steps}")  # fmt: skip

    # phase 1: SFT (also measures the held-out loss before and after)
    current = out / "sft" / MODEL_DIR
    sft = state.done("sft")
    if sft is None:
        meter = Meter()
        model, tok = load_gguf(base_file)
        train_ex, skipped = encode_rows(tok, train_rows, config.max_tokens)
        held_ex, _ = encode_rows(tok, held_rows, config.max_tokens)
        held_ex = held_ex[: config.eval_rows]
        before = heldout_loss(model, held_ex)
        echo(f"held-out loss before: {before} on {len(held_ex)} rows; {len(train_ex)} train rows fit "
             f"in {config.max_tokens} tokens ({skipped} longer, skipped)")  # fmt: skip
        result = (
            run_sft(model, tok, train_ex, config, log)
            if config.sft_steps
            else {"steps": 0, "losses": []}
        )
        after = heldout_loss(model, held_ex)
        echo(f"held-out loss after SFT: {after}")
        _save_checkpoint(model, tok, current)
        del model
        sft = {**result, "heldout_loss_before": before, "heldout_loss_after": after,
               "heldout_rows": len(held_ex), "train_rows": len(train_ex), "skipped_long": skipped,
               "cpu_minutes": meter.minutes(), "peak_rss_mb": Meter.peak_rss_mb()}  # fmt: skip
        state.finish("sft", sft)

    # phase 2: SMITH's GRPO
    smith = state.done("rl-smith")
    if smith is None:
        meter = Meter()
        if smith_steps:
            smith = run_rl_smith(current, out / "rl-smith", config, smith_steps, log)
        else:
            smith = {"steps": 0}
        smith.update(cpu_minutes=meter.minutes(), peak_rss_mb=Meter.peak_rss_mb())
        if smith["steps"]:  # a phase of 0 steps stays open: a resume with steps runs it
            state.finish("rl-smith", smith)
    if smith.get("steps"):
        current = out / "rl-smith" / MODEL_DIR

    # phase 3: the other agents' GRPO with verified rewards
    agents = state.done("rl-agents")
    if agents is None:
        meter = Meter()
        if agent_steps and verify is not None:
            agents = run_rl_agents(
                current, out / "rl-agents", agent_rows, config, agent_steps, verify, log
            )
        else:
            agents = {
                "steps": 0,
                "why": "no non-SMITH rows or no verify_reply" if config.rl_steps else "",
            }
        agents.update(cpu_minutes=meter.minutes(), peak_rss_mb=Meter.peak_rss_mb())
        if agents["steps"]:
            state.finish("rl-agents", agents)
    if agents.get("steps"):
        current = out / "rl-agents" / MODEL_DIR

    # phase 4: export, final held-out loss, sanity check, card
    meter = Meter()
    model, tok = _load_hf(current)
    held_ex = encode_rows(tok, held_rows, config.max_tokens)[0][: config.eval_rows]
    final_loss = heldout_loss(model, held_ex)
    del model
    target = Path(gguf_out) if gguf_out is not None else out / f"model.{config.outtype}.gguf"
    export_gguf(current, target, outtype=config.outtype)
    firsts = {r.agent: r for r in reversed(held_rows)}  # one held-out row per agent
    sanity = [sanity_check(target, r, verify) for _, r in sorted(firsts.items())]
    size = target.stat().st_size
    export: dict[str, Any] = {"cpu_minutes": meter.minutes(), "file": str(target), "bytes": size}
    card = {
        "model": target.name,
        "base_model": {"file": base_file.name, "sha256": _sha256(base_file)},
        "data": {
            "file": str(data_file),
            "sha256": data_sha,
            "rows": len(rows),
            "train_rows": len(train_rows),
            "heldout_rows": len(held_rows),
            "heldout_rule": f"int(id[:8], 16) % {HELDOUT_MOD} == 0",
        },  # fmt: skip
        "seed": config.seed,
        "config": config.model_dump(),
        "steps": {
            "sft": sft.get("steps", 0),
            "rl-smith": smith.get("steps", 0),
            "rl-agents": agents.get("steps", 0),
        },  # fmt: skip
        "cpu_minutes": {
            "sft": sft.get("cpu_minutes"),
            "rl-smith": smith.get("cpu_minutes"),
            "rl-agents": agents.get("cpu_minutes"),
            "export": export["cpu_minutes"],
        },  # fmt: skip
        "peak_rss_mb": Meter.peak_rss_mb(),
        "heldout_loss": {
            "base": sft.get("heldout_loss_before"),
            "after_sft": sft.get("heldout_loss_after"),
            "final": final_loss,
            "rows": len(held_ex),
        },  # fmt: skip
        "sft_losses": sft.get("losses", []),
        "rl_smith_log": smith.get("log", []),
        "rl_agents_log": agents.get("log", []),
        "sanity": sanity,
        "bytes": export["bytes"],
        "outtype": config.outtype,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    card_path = target.with_suffix(".json")
    tmp = card_path.with_name(card_path.name + ".tmp")
    tmp.write_text(json.dumps(card, indent=2, default=str))
    os.replace(tmp, card_path)
    state.finish("export", export)
    echo(f"wrote {target} ({size / 1e6:.1f} MB) and {card_path.name}; "
         f"held-out loss {card['heldout_loss']['base']} -> {final_loss}")  # fmt: skip
    return card


__all__ = [
    "PHASES",
    "PostTrainConfig",
    "TrainRow",
    "VerifiedReward",
    "collate",
    "encode",
    "encode_rows",
    "heldout_loss",
    "load_rows",
    "run",
    "is_heldout",
    "split_heldout",
]
