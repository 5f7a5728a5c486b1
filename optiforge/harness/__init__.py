"""The harness: the layer above the agents that runs them and reports what they did.

- ``context``: the live services one run's agent sees (``build_context``);
- ``runner``: ``run_task`` (one agent on one task, the best candidate re-measured) and
  ``run_eval`` (task x seed x method, resumable), with their summaries;
- ``report``: ``summary.md``, plots and the HTML report of a run or an eval.

Agents never import the harness; the CLI (``optiforge.cli``) sits on top of it.
"""
