"""`promem serve -c CONFIG --store DIR [--host H --port P]`: the HTTP service (serve/app.py)."""
from __future__ import annotations

import logging
import os
import sys

from cli.main import add_config_arg, config_from

log = logging.getLogger("promem.serve")


def register(sub) -> None:
    p = sub.add_parser("serve", help="HTTP service: POST events per user, get decisions (FastAPI + uvicorn)")
    add_config_arg(p)
    p.add_argument("--store", help="memory store folder (default: cfg.serve.store); created if missing")
    p.add_argument("--host", help="address to listen on (default: cfg.serve.host)")
    p.add_argument("--port", type=int, help="port (default: cfg.serve.port)")
    p.set_defaults(func=run)


def run(args) -> int:
    from uvicorn import Server

    from core.config import resolve_path
    from serve.app import create_app
    from serve.server import server_config

    cfg = config_from(args)
    store = resolve_path(args.store or cfg.serve.store)
    host = args.host or cfg.serve.host
    port = cfg.serve.port if args.port is None else args.port
    try:
        app = create_app(cfg, store)
    except (OSError, ValueError) as exc:
        # Typically a model artifact that is not trained yet (the gate, the cue encoder).
        print(f"promem serve: cannot start: {exc}", file=sys.stderr)
        return 2
    if not os.environ.get(cfg.serve.token_env) and host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("listening on %s without a token: anyone who reaches the port can read every user's memory; "
                    "set $%s", host, cfg.serve.token_env)
    log.info("serving %s (reasoner %s) on http://%s:%d with memory store %s", cfg.source, cfg.reasoner.backend,
             host, port, store)
    Server(server_config(app, cfg, host, port, log_level="info")).run()
    return 0
