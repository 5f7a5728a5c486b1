"""GRPO training of SMITH's policy (build and use rollouts) with TRL, on the dev split.

The policy is one causal LM. A **build** row shows a build task's solved examples
(``proposers.build_prompt``) and asks for a tool; a **use** row shows a question and the
pool as JSON tool specs and asks for one function call as JSON. The pool of a use row is
the template library (``templates.TEMPLATES``: the no-learning baseline's tools), standing
in for the tools the policy built earlier. Both kinds are mixed in one dataset
(``rollout_dataset``).

Rewards are the suite's three axes, one TRL reward function each (``schema_reward``,
``code_reward``, ``outcome_reward``), so TRL logs each axis's mean per step
(``rewards/<name>/mean``) and trains on their sum. A completion is scored once, in the
sandbox: the task's ``validate`` (build) or ``score_calls`` (use) on the row's episode;
the three functions read one shared cache. An unparseable completion scores 0 on every
axis without running anything.

``train`` refuses any task whose split is not ``dev``: the held-out families must stay
out of training. The task object is passed in (this package never imports
``optiforge.evals``). TRL, transformers and datasets are imported lazily: they come with
the ``smith-train`` extra. ``tiny_model`` writes a tiny random LM and a tokenizer trained on
the fly, for checking the mechanics on a CPU in seconds without any download.
"""

from __future__ import annotations

import json
import math
import random
import warnings
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optiforge.agents.smith.proposers import (
    FORMAT,
    build_prompt,
    call_prompt,
    parse_tool,
    tool_specs,
)
from optiforge.agents.smith.templates import TEMPLATES
from optiforge.errors import ConfigError
from optiforge.evals.protocol import Task
from optiforge.evals.suites.procedural.protocol import ProceduralTask

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.sandboxes import Sandbox

AXES = ("schema", "code", "outcome")
REWARD_NAMES = tuple(f"{ax}_reward" for ax in AXES)
LOG_KEYS = {ax: f"rewards/{name}/mean" for ax, name in zip(AXES, REWARD_NAMES, strict=True)}
"""The keys under which TRL logs each axis's mean reward per step."""
EXTRA_HINT = "GRPO training needs the smith-train extra: pip install -e '.[smith-train]'"
TINY_MODEL_DIR = "tiny-model"
MODEL_DIR = "model"
_SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]


# ---------------------------------------------------------------------------- rollouts


def template_pool() -> list[dict[str, Any]]:
    """The pool a use row is shown: the template tools (the no-learning library)."""
    return [t.tool() for t in TEMPLATES]


def use_prompt(question: str, pool: list[dict[str, Any]]) -> str:
    """Ask for one function call as JSON (the wording of ``proposers.llm_call`` for a
    model without function calling)."""
    return call_prompt(question, pool)


def rollout_dataset(task: ProceduralTask, episodes: int, seed: int) -> list[dict[str, Any]]:
    """GRPO rows ``{"prompt", "kind", "episode", "build_id", "question_id"}``: for each
    episode (``task.with_seed(seed * 1000 + e)``; ``episode`` is that seed) one build row
    per build task and one use row per use question, both kinds shuffled together."""
    pool = template_pool()
    rows: list[dict[str, Any]] = []
    for e in range(episodes):
        ep = seed * 1000 + e
        t = task.with_seed(ep)
        for b in t.build_tasks:
            rows.append({"prompt": build_prompt(b["examples"]), "kind": "build", "episode": ep,
                         "build_id": b["id"], "question_id": ""})  # fmt: skip
        for q in t.use_questions:
            rows.append({"prompt": use_prompt(q["question"], pool), "kind": "use", "episode": ep,
                         "build_id": "", "question_id": q["id"]})  # fmt: skip
    random.Random(seed).shuffle(rows)
    return rows


# ---------------------------------------------------------------------------- rewards


def completion_text(completion: Any) -> str:
    """A completion's text: a string, or a chat-format list of messages (the assistant's
    contents joined) or one message."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if isinstance(completion, list):
        parts = []
        for m in completion:
            if isinstance(m, dict) and m.get("role", "assistant") == "assistant":
                content = m.get("content")
                if isinstance(content, str):
                    parts.append(content)
                elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
                    parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return "".join(parts)
    return str(completion)


def parse_call(text: str) -> dict[str, Any] | None:
    """The function call ``{"name", "arguments"}`` in a reply (the JSON object from its
    first ``{`` to its last ``}``, as ``proposers.llm_call`` reads it); None without one."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        obj = json.loads(text[start : end + 1])
    except (ValueError, RecursionError):
        return None
    if isinstance(obj, dict) and isinstance(obj.get("name"), str):
        return {"name": obj["name"], "arguments": obj.get("arguments")}
    return None


class SmithRewards:
    """Scores completions on the three axes, each (row, completion text) once: the
    sandbox runs once per completion however many axes read it (``runs`` counts the
    sandboxed scorings; the cache keeps the last ``cache_size``)."""

    def __init__(
        self,
        task: ProceduralTask,
        pool: list[dict[str, Any]] | None = None,
        sandbox: Sandbox | None = None,
        cache_size: int = 4096,
    ) -> None:
        self.task = task
        self.pool = template_pool() if pool is None else pool
        self.sandbox = sandbox
        self.cache_size = cache_size
        self.runs = 0
        self._episodes: dict[int, ProceduralTask] = {}
        self._cache: OrderedDict[tuple[str, int, str, str, str], dict[str, float]] = OrderedDict()

    def episode(self, seed: int) -> ProceduralTask:
        """The task's episode ``seed`` (built once)."""
        if seed not in self._episodes:
            self._episodes[seed] = self.task.with_seed(seed)
        return self._episodes[seed]

    def score(
        self, text: str, kind: str, episode: int, build_id: str = "", question_id: str = ""
    ) -> dict[str, float]:
        """``{"schema", "code", "outcome"}`` of one completion for one row."""
        key = (str(kind), int(episode), str(build_id or ""), str(question_id or ""), text)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        out = self._score(*key)
        self._cache[key] = out
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return out

    def _score(
        self, kind: str, episode: int, build_id: str, question_id: str, text: str
    ) -> dict[str, float]:
        zero = dict.fromkeys(AXES, 0.0)
        r: dict[str, Any] | None
        if kind == "build":
            try:
                tool, _ = parse_tool(text)
            except RecursionError:
                tool = None
            if tool is None:
                return zero
            self.runs += 1
            r = self.episode(episode).validate(build_id, tool, self.sandbox)
        elif kind == "use":
            call = parse_call(text)
            if call is None:
                return zero
            self.runs += 1
            got = self.episode(episode).score_calls({question_id: call}, self.pool, self.sandbox)
            r = got.get(question_id)
            if r is None:
                return zero
        else:
            raise ConfigError(f"a GRPO row's kind is 'build' or 'use', got {kind!r}")
        return {ax: float(r[ax]) for ax in AXES}

    def axis(self, axis: str) -> AxisReward:
        return AxisReward(self, axis)

    def funcs(self) -> list[AxisReward]:
        """``[schema_reward, code_reward, outcome_reward]``, sharing this scorer's cache."""
        return [self.axis(ax) for ax in AXES]


class AxisReward:
    """One axis as a TRL reward function ``f(prompts, completions, **columns)``; TRL
    names its logged mean after ``__name__`` (``<axis>_reward``)."""

    def __init__(self, scorer: SmithRewards, axis: str) -> None:
        if axis not in AXES:
            raise ConfigError(f"no reward axis {axis!r} (axes: {', '.join(AXES)})")
        self.scorer = scorer
        self.axis = axis
        self.__name__ = f"{axis}_reward"

    def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
        n = len(completions)
        kinds = kwargs.get("kind") or [""] * n
        episodes = kwargs.get("episode") or [0] * n
        build_ids = kwargs.get("build_id") or [""] * n
        question_ids = kwargs.get("question_id") or [""] * n
        return [
            self.scorer.score(
                completion_text(c), kinds[i], episodes[i], build_ids[i], question_ids[i]
            )[self.axis]  # fmt: skip
            for i, c in enumerate(completions)
        ]


def reward_funcs(task: ProceduralTask, sandbox: Sandbox | None = None) -> list[AxisReward]:
    """``schema_reward, code_reward, outcome_reward`` for ``task``'s episodes, sharing one
    cache (see ``SmithRewards``)."""
    return SmithRewards(task, sandbox=sandbox).funcs()


# ---------------------------------------------------------------------------- models


def _require_train_extra() -> None:
    try:
        import datasets  # noqa: F401
        import transformers  # noqa: F401
        import trl  # noqa: F401
    except ImportError as e:
        raise ConfigError(f"{EXTRA_HINT} ({e})") from None


def _tokenizer_corpus() -> list[str]:
    """What the tiny tokenizer's merges are learned from: SMITH's fixed prompt text."""
    pool = template_pool()
    texts = [FORMAT, use_prompt("What is 14 raised to the power 7, modulo 82?", pool)]
    texts += [t["code"] for t in pool] + [json.dumps(s) for s in tool_specs(pool)]
    texts.append(build_prompt([{"question": "What is the greatest common divisor of the numbers "
                                            "[132,36,96]?", "answer": 12}]))  # fmt: skip
    return texts


def tiny_model(path: str | Path, seed: int = 0, vocab_size: int = 512) -> Path:
    """Write a tiny random ``LlamaForCausalLM`` (2 layers, hidden 64) and a byte-level BPE
    tokenizer (merges learned on the fly from SMITH's prompt text; any text encodes) to
    ``path``, without a download. Returns ``path``."""
    _require_train_extra()
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    core = Tokenizer(models.BPE(unk_token=None))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=_SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    core.train_from_iterator(_tokenizer_corpus(), trainer=trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", bos_token="<bos>",
                                  eos_token="<eos>", unk_token="<unk>")  # fmt: skip
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out


def _local_model(model: str | Path) -> Path:
    path = Path(model).expanduser()
    if not (path / "config.json").is_file():
        raise ConfigError(f"--model must be a local model directory with a config.json, got {str(model)!r} "
                          "(models are never downloaded here)")  # fmt: skip
    return path


# ---------------------------------------------------------------------------- training


def _check_task(task: Task) -> ProceduralTask:
    """``task`` as a procedural dev task, or a ``ConfigError`` saying why not.

    Raises:
        ConfigError: not a procedural task, or not of the dev split.
    """
    if not isinstance(task, ProceduralTask):
        raise ConfigError(f"{task.name!r} is not a procedural task (GRPO trains "
                          "SMITH on procedural/train-families)")  # fmt: skip
    if task.split != "dev":
        raise ConfigError(f"GRPO trains on dev tasks only: {task.name!r} is split "
                          f"{task.split!r}, and held-out families must stay out of training")  # fmt: skip
    return task


def step_entries(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-step entries of a trainer's log history (not the end-of-training summary)."""
    return [e for e in log_history if "loss" in e and "step" in e]


def train(
    task: Task,
    model: str | None,
    out_dir: str | Path,
    steps: int,
    episodes: int,
    seed: int,
    num_generations: int = 4,
    max_completion_length: int = 64,
    learning_rate: float = 1e-6,
    sandbox: Sandbox | None = None,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """GRPO on ``task``'s rollouts (see the module doc). ``model``: a local model directory,
    or None for ``tiny_model`` (written to ``out_dir/tiny-model``). Writes ``log.jsonl``
    (one line per logged step: TRL's entry, with ``loss`` and ``rewards/<axis>_reward/mean``)
    and the trained model and tokenizer (``out_dir/model``). ``on_step`` sees each step's
    entry as it is logged. Returns ``{"log": the trainer's log history, "steps",
    "model_dir", "sandbox_runs"}``."""
    procedural = _check_task(task)
    for name, value, low in (("steps", steps, 1), ("episodes", episodes, 1),
                             ("num_generations", num_generations, 2),
                             ("max_completion_length", max_completion_length, 1)):  # fmt: skip
        if not isinstance(value, int) or value < low:
            raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}")
    _require_train_extra()
    import torch
    from datasets import Dataset
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        PrinterCallback,
        ProgressCallback,
        TrainerCallback,
    )
    from trl import GRPOConfig, GRPOTrainer

    local = None if model is None else _local_model(model)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model_dir = tiny_model(out / TINY_MODEL_DIR, seed) if local is None else local
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    policy = AutoModelForCausalLM.from_pretrained(
        str(model_dir), local_files_only=True, dtype=torch.float32
    )
    rows = rollout_dataset(procedural, episodes, seed)
    if getattr(tokenizer, "chat_template", None):  # an instruct model: conversational prompts
        rows = [{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} for r in rows]
    scorer = SmithRewards(procedural, sandbox=sandbox)
    config = GRPOConfig(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=num_generations,  # one prompt's group per step
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        learning_rate=learning_rate,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        bf16=False,  # TRL's default is bf16 on: fp32 on a CPU
        # TRL turns gradient checkpointing on (a cost, not a saving, for small models);
        # transformers 5 names it activation_checkpointing (the old name warns)
        activation_checkpointing=False,
        save_strategy="no",
        seed=seed,
        data_seed=seed,
        disable_tqdm=True,
    )
    log_path = out / "log.jsonl"
    log_path.write_text("")

    class _StepLog(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if not logs or "loss" not in logs:
                return
            entry = {"step": state.global_step, **{k: _finite(v) for k, v in logs.items()}}
            with log_path.open("a") as f:
                f.write(json.dumps(entry, default=str) + "\n")
            if on_step is not None:
                on_step(entry)

    funcs: list[Any] = list(scorer.funcs())  # TRL's annotation wants list[float | None] back
    with warnings.catch_warnings():
        # TRL 1.16 asks the model the deprecated name (transformers 5); nothing to act on
        warnings.filterwarnings(
            "ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning
        )
        trainer = GRPOTrainer(
            model=policy,
            reward_funcs=funcs,
            args=config,
            train_dataset=Dataset.from_list(rows),
            processing_class=tokenizer,
        )
        for cb in (PrinterCallback, ProgressCallback):  # the CLI prints its own line per step
            trainer.remove_callback(cb)
        trainer.add_callback(_StepLog())
        trainer.train()
    trainer.save_model(str(out / MODEL_DIR))
    tokenizer.save_pretrained(str(out / MODEL_DIR))
    return {
        "log": trainer.state.log_history,
        "steps": trainer.state.global_step,
        "model_dir": str(out / MODEL_DIR),
        "sandbox_runs": scorer.runs,
    }


def _finite(value: Any) -> Any:
    """NaN and infinities as null: log.jsonl stays JSON."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


__all__ = [
    "AXES",
    "LOG_KEYS",
    "AxisReward",
    "SmithRewards",
    "completion_text",
    "parse_call",
    "reward_funcs",
    "rollout_dataset",
    "step_entries",
    "tiny_model",
    "train",
    "use_prompt",
]
