from core.config._base import Section


class ServeConfig(Section):
    host: str = "127.0.0.1"
    port: int = 8080
