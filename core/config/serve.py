from core.config._base import Section


class ServeConfig(Section):
    host: str = "127.0.0.1"
    port: int = 8080
    store: str = "runs/serve"  # memory store of the service (`promem serve --store` overrides)
    max_events: int = 1000  # events accepted in one POST
    max_open_users: int = 64  # memories kept open; the least recently used is closed (reopened on demand)
    # When this environment variable is set, /v1 requests need "Authorization: Bearer <its value>".
    # (Not PROMEM_*: that prefix is read as config overrides.)
    token_env: str = "PROMEMAGENT_SERVE_TOKEN"
