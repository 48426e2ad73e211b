from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """Config sections reject unknown keys, so a typo is an error rather than a silent default."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)
