from pydantic import Field

from core.config._base import Section


class ServeConfig(Section):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)
    store: str = "runs/serve"  # memory store of the service (`promem serve --store` overrides)
    max_events: int = Field(1000, ge=1)  # events accepted in one POST
    max_open_users: int = Field(64, ge=1)  # memories kept open; the least recently used is closed (reopened on demand)
    # When this environment variable is set, every request but /healthz (the API docs included) needs
    # "Authorization: Bearer <its value>".
    # (Not PROMEM_*: that prefix is read as config overrides.)
    token_env: str = "PROMEMAGENT_SERVE_TOKEN"
    # A client must send complete request headers within this many seconds (slow clients are cut off),
    # and a request body within body_timeout_s.
    header_timeout_s: float = Field(10.0, gt=0)
    body_timeout_s: float = Field(60.0, gt=0)
