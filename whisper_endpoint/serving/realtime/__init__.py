"""Live transcription over an OpenAI Realtime-compatible WebSocket (``GET /v1/realtime``).

routes: admission, auth, limits, the receive loop; session: one session's audio, turns and decodes;
events: the client events (pydantic) and server events; config: a session's settings; vad: Silero VAD
frame by frame and the server-VAD rules; agreement: local agreement for deltas; pcm: PCM16 in;
decoder: decoding through the server's gate; client_secrets: short-lived secrets for browsers.
"""

from whisper_endpoint.serving.realtime.routes import router

__all__ = ["router"]
