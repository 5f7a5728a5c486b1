"""A scripted LLM for SMITH runs without a model: a competent tool writer and caller.

It writes tools the way a capable model would: for the held-out and out-of-domain
families its own reference tools (written here, never seen by the agent or the
suite), for the training families the template library; it recognises a family from
keywords of the build prompt's examples, never from answers. With ``buggy_first`` its
first tool for each family returns the answer as a string (the strict verifier fails
it), and it fixes that when the prompt says validation failed. Use prompts are answered
with a function call chosen by the offline matcher. Test and benchmark use only.
"""

from __future__ import annotations

import json
from typing import Any

from optiforge.agents.smith.proposers import offline_call
from optiforge.agents.smith.templates import TEMPLATES, match

INT = {"type": "integer"}
STR = {"type": "string"}
INTS = {"type": "array", "items": INT}


def _obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)}


REFERENCE: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("longest common subsequence",), {
        "name": "lcs_length", "description": "length of the longest common subsequence of two strings",
        "parameters": _obj(a=STR, b=STR),
        "code": "def lcs_length(a, b):\n    prev = [0] * (len(b) + 1)\n    for x in a:\n        cur = [0]\n"
                "        for j, y in enumerate(b):\n            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))\n"
                "        prev = cur\n    return prev[-1]\n"}),
    (("undirected graph",), {
        "name": "shortest_path", "description": "shortest path length in an undirected weighted graph, -1 if none",
        "parameters": _obj(n=INT, edges={"type": "array", "items": INTS}, source=INT, target=INT),
        "code": "import heapq\n\ndef shortest_path(n, edges, source, target):\n    adj = [[] for _ in range(n)]\n"
                "    for u, v, w in edges:\n        adj[u].append((v, w))\n        adj[v].append((u, w))\n"
                "    dist = {source: 0}\n    heap = [(0, source)]\n    while heap:\n        d, u = heapq.heappop(heap)\n"
                "        if u == target:\n            return d\n        if d > dist.get(u, d):\n            continue\n"
                "        for v, w in adj[u]:\n            if d + w < dist.get(v, float('inf')):\n"
                "                dist[v] = d + w\n                heapq.heappush(heap, (d + w, v))\n    return -1\n"}),
    (("weights", "values"), {
        "name": "knapsack", "description": "0/1 knapsack: the best total value within the capacity",
        "parameters": _obj(weights=INTS, values=INTS, capacity=INT),
        "code": "def knapsack(weights, values, capacity):\n    best = [0] * (capacity + 1)\n"
                "    for w, v in zip(weights, values):\n        for c in range(capacity, w - 1, -1):\n"
                "            best[c] = max(best[c], best[c - w] + v)\n    return best[capacity]\n"}),
    (("determinant",), {
        "name": "determinant", "description": "exact determinant of a square integer matrix",
        "parameters": _obj(matrix={"type": "array", "items": INTS}),
        "code": "from fractions import Fraction\n\ndef determinant(matrix):\n    m = [[Fraction(x) for x in row] for row in matrix]\n"
                "    n, det = len(m), Fraction(1)\n    for i in range(n):\n"
                "        p = next((r for r in range(i, n) if m[r][i] != 0), None)\n        if p is None:\n            return 0\n"
                "        if p != i:\n            m[i], m[p] = m[p], m[i]\n            det = -det\n        det *= m[i][i]\n"
                "        for r in range(i + 1, n):\n            f = m[r][i] / m[i][i]\n"
                "            for c in range(i, n):\n                m[r][c] -= f * m[i][c]\n    return int(det)\n"}),
    (("price table",), {
        "name": "table_total", "description": "total cost of purchases from a price table, dollars with 2 decimals",
        "parameters": _obj(table={"type": "array", "items": {"type": "array", "items": STR}},
                           purchases={"type": "array", "items": {"type": "array"}}),
        "code": "def table_total(table, purchases):\n    head = table[0]\n    i, p = head.index('item'), head.index('price')\n"
                "    cents = {row[i]: int(row[p].replace('.', '')) for row in table[1:]}\n"
                "    total = sum(cents[item] * qty for item, qty in purchases)\n"
                "    return f'{total // 100}.{total % 100:02d}'\n"}),
    (("scene has the objects",), {
        "name": "count_objects", "description": "count scene objects matching color/shape and a relation to an anchor",
        "parameters": _obj(objects={"type": "array", "items": {"type": "object"}},
                           relations={"type": "array", "items": {"type": "array"}}, query={"type": "object"}),
        "code": "def count_objects(objects, relations, query):\n    rel = {tuple(r) for r in relations}\n    n = 0\n"
                "    for o in objects:\n        if query.get('color') not in (None, o['color']):\n            continue\n"
                "        if query.get('shape') not in (None, o['shape']):\n            continue\n"
                "        if query.get('relation') is not None and (o['id'], query['relation'], query['anchor_id']) not in rel:\n"
                "            continue\n        n += 1\n    return n\n"}),
]  # fmt: skip


def _reply(tool: dict[str, Any], code: str, structured: bool = False) -> str:
    spec = {k: tool[k] for k in ("name", "description", "parameters")}
    if structured:
        params = []
        for k, v in tool["parameters"]["properties"].items():
            item = (v.get("items") or {}).get("type")
            params.append({"name": k, "type": v["type"], **({"items": item} if item else {})})
        return json.dumps(
            {
                "name": tool["name"],
                "description": tool["description"],
                "params": params,
                "code": code,
            }
        )
    return f"```json\n{json.dumps(spec)}\n```\n```python\n{code}```\n"


def _examples(prompt: str) -> list[dict[str, Any]]:
    return [{"question": line[3:]} for line in prompt.splitlines() if line.startswith("Q: ")]


def write_tool(prompt: str, buggy_first: bool = False, structured: bool = False) -> str:
    """The reply to a build prompt (see the module doc); a refusal for an unknown family."""
    examples = _examples(prompt)
    text = " ".join(e["question"].lower() for e in examples)
    tool = next((t for keys, t in REFERENCE if all(k in text for k in keys)), None)
    if tool is None:
        tmpl = match(examples) if examples else None
        tool = tmpl.tool() if tmpl else None
    if tool is None:
        return "I cannot tell what these examples compute."
    code = tool["code"]
    if buggy_first and "failed validation" not in prompt:
        code = _stringify_last(code)
    return _reply(tool, code, structured)


def _stringify_last(code: str) -> str:
    """The code with its function's final ``return X`` as ``return str(X)``."""
    lines = code.rstrip("\n").split("\n")
    for i in range(len(lines) - 1, -1, -1):
        stripped = lines[i].strip()
        if stripped.startswith("return "):
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = f"{indent}return str({stripped[len('return ') :]})"
            break
    return "\n".join(lines) + "\n"


def smith_llm(buggy_first: bool = False) -> Any:
    """A ``FunctionLLM`` playing the tool writer and caller."""
    from optiforge.testing import FunctionLLM

    def reply(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        prompt = str(messages[-1]["content"])
        if prompt.startswith("Write a Python tool"):
            return write_tool(prompt, buggy_first, structured=schema is not None)
        question = prompt.split("Question: ", 1)[-1].split("\n\nTools:")[0]
        pool = [t["function"] for t in tools or []]
        if not pool and "\n\nTools:\n" in prompt:
            pool = [
                json.loads(line)
                for line in prompt.split("\n\nTools:\n", 1)[1].split("\n\n")[0].splitlines()
            ]
        call = offline_call(question, pool)
        if call is None:
            return "I have no tool for this."
        if tools:
            return {"content": "", "tool_calls": [call]}
        return json.dumps(call)

    return FunctionLLM(reply, model="scripted-smith")


__all__ = ["REFERENCE", "TEMPLATES", "smith_llm", "write_tool"]
