"""Registry of every API we declare: one module per API, each defining ``API``.

Modules are discovered automatically, so adding ``protocol/apis/foo.py`` with an
``API = Api(...)`` registers it. ``API_BY_KEY`` maps api key -> ``Api``.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..schema import Api


def _discover() -> dict[int, Api]:
    found: dict[int, Api] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        api = getattr(module, "API", None)
        if isinstance(api, Api):
            if api.key in found:
                raise RuntimeError(f"api key {api.key} declared twice")
            found[api.key] = api
    return found


API_BY_KEY: dict[int, Api] = _discover()
API_BY_NAME: dict[str, Api] = {api.name: api for api in API_BY_KEY.values()}
