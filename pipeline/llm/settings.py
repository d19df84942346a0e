"""Settings of an OpenAI-compatible chat endpoint: where it is, which model, which key, how hard to push it.

The key itself is never a setting: `api_key_env` names the environment variable that holds it, so settings,
fingerprints and records can be shared without leaking it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pipeline.errors import masked_url


class ChatSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = Field("https://api.openai.com/v1",
                          description="the endpoint's OpenAI-compatible base URL (…/v1), without credentials")
    model: str = Field("", description="the model name the endpoint knows, e.g. gpt-4.1-mini or qwen2.5:7b")
    api_key_env: str | None = Field("OPENAI_API_KEY", description="environment variable that holds the key; "
                                    "empty for local servers that need none (Ollama, vLLM, LM Studio)")
    concurrency: int = Field(8, ge=1, le=64, description="requests in flight at once")
    timeout_s: float = Field(120.0, gt=0, description="seconds one request may take before it is tried again")
    max_retries: int = Field(5, ge=0, le=20, description="tries after the first, on 429, 5xx, timeouts, lost "
                             "connections")
    backoff_s: float = Field(1.0, ge=0, description="first wait when the server gives no Retry-After; doubles")
    backoff_cap_s: float = Field(60.0, ge=0, description="longest wait, Retry-After included")
    max_completion_tokens: int = Field(4096, ge=0, description="per answer; 0 leaves it out (for servers that "
                                       "refuse the field) and to the server")
    max_total_tokens: int | None = Field(None, ge=1, description="budget: prompt + completion tokens of the "
                                         "requests this run sends (cached answers are free)")
    price_per_1k_tokens: float | None = Field(None, ge=0, description="to report cost and apply max_cost")
    max_cost: float | None = Field(None, ge=0, description="budget in the price's currency; needs "
                                   "price_per_1k_tokens")
    cache: bool = Field(True, description="keep answers by request hash under build/llm-cache/")

    @field_validator("base_url")
    @classmethod
    def _plain_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url {masked_url(value)!r} is not an http(s) URL such as https://api.openai.com/v1")
        if parts.username or parts.password:
            raise ValueError("base_url must not hold credentials (user:password@): put the key in the "
                             "environment variable named by api_key_env")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.replace("_", "").isalnum() or value[0].isdigit():
            # The value is not repeated: someone may have pasted the key itself here.
            raise ValueError("api_key_env must be an environment variable NAME (letters, digits, '_'; e.g. "
                             "OPENAI_API_KEY), never the key itself")
        return value

    @model_validator(mode="after")
    def _cost_needs_price(self) -> ChatSettings:
        if self.max_cost is not None and self.price_per_1k_tokens is None:
            raise ValueError("max_cost needs price_per_1k_tokens")
        return self

    @property
    def endpoint(self) -> str:
        """The base URL as records and hashes keep it (it holds no credentials: see the validator)."""
        return self.base_url

    @property
    def endpoint_host(self) -> str:
        """host[:port] of the endpoint, for run records and output."""
        return host_of(self.base_url)


def host_of(url: str) -> str:
    """host[:port] only: no scheme, no credentials, no path or query (they may hold secrets)."""
    return urlsplit(url).netloc.rsplit("@", 1)[-1]
