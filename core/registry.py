"""Provider registry: interchangeable backends (captioner, ASR, embedder, LLM, ...) by kind and name.

A backend module registers a factory under (kind, name); configs name the backend and
`create` builds it. Factories are imported lazily from a dotted path so that choosing
one backend never imports another's heavy dependencies.
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

_FACTORIES: dict[tuple[str, str], Callable[..., Any] | str] = {}


class UnknownBackend(ValueError):
    pass


def register(kind: str, name: str, factory: Callable[..., Any] | str | None = None):
    """Register a factory (a callable or a "module:attr" path). Usable as a decorator."""
    if factory is not None:
        _FACTORIES[(kind, name)] = factory
        return factory

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        _FACTORIES[(kind, name)] = fn
        return fn

    return deco


def names(kind: str) -> list[str]:
    return sorted(n for k, n in _FACTORIES if k == kind)


def resolve(kind: str, name: str) -> Callable[..., Any]:
    try:
        factory = _FACTORIES[(kind, name)]
    except KeyError:
        raise UnknownBackend(
            f"unknown {kind} backend {name!r}; available: {', '.join(names(kind)) or 'none'}"
        ) from None
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        _FACTORIES[(kind, name)] = factory
    return factory


def create(kind: str, name: str, *args: Any, **kwargs: Any) -> Any:
    return resolve(kind, name)(*args, **kwargs)
