"""LDPCache: multi-query LLM processing under local differential privacy with a response cache.

``scheduler`` holds the session (query perturbation, the LDP scheduler, the budget plan)
and the privacy accounting written out; ``mechanisms`` the randomizers and the
distinguishing-attack statistic; ``cache`` the multi-factor eviction; ``accountant`` the
filter and composition; ``workload`` fact tables, correlated query sequences, the answer
checker and a table-backed stand-in LLM. The LLM and the embedder are injected callables:
``chat_asker(make_llm(...))`` and ``MiniLMEmbedder().embed`` wire the project's LLM layer
and the memory's embedding model (``benchmarks/ldpcache_claims.py``).
"""

from optiforge.solvers.ldpcache.accountant import PrivacyAccountant
from optiforge.solvers.ldpcache.cache import CacheEntry, EvictionWeights, ResponseCache
from optiforge.solvers.ldpcache.mechanisms import (
    ExponentialMechanism,
    RandomizedResponseDecision,
    SparseVectorDecision,
    ldp_violation_bound,
)
from optiforge.solvers.ldpcache.scheduler import (
    Calibration,
    LDPCacheConfig,
    LDPCacheSession,
    PerQueryLDP,
    StepResult,
    chat_asker,
    fit_calibration,
    fit_exponent,
)

__all__ = [
    "CacheEntry",
    "Calibration",
    "EvictionWeights",
    "ExponentialMechanism",
    "LDPCacheConfig",
    "LDPCacheSession",
    "PerQueryLDP",
    "PrivacyAccountant",
    "RandomizedResponseDecision",
    "ResponseCache",
    "SparseVectorDecision",
    "StepResult",
    "chat_asker",
    "fit_calibration",
    "fit_exponent",
    "ldp_violation_bound",
]
