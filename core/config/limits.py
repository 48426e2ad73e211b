from pydantic import Field

from core.config._base import Section


class LimitsConfig(Section):
    """Size caps on input events (CLI files and the service): one huge field would otherwise be embedded,
    stored and re-read at every later event of that user."""

    max_text_chars: int = Field(8000, ge=1)  # 'visual', 'audio' and any extra string key of an event
    max_field_chars: int = Field(512, ge=1)  # 'id', 'user_id', 'location', 'time', 'end'
    max_body_bytes: int = Field(8 * 1024 * 1024, ge=1)  # one service request, checked while it is read
