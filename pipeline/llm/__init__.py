"""A client for OpenAI-compatible chat endpoints (OpenAI, Gemini's OpenAI-compatible endpoint, vLLM, Ollama,
LM Studio) through the official `openai` SDK, shared by every step that asks a chat model something.

`settings` (what the user sets), `content` (messages: text, images; video goes there too), `request` (one
request and its hash), `cache` (answers by request hash under build/), `budget` (tokens and cost),
`retry` (when to try again), `key` (the API key: read from the environment, never written anywhere),
`client` (bounded concurrency over all of them). Only `client` imports the SDK.
"""
