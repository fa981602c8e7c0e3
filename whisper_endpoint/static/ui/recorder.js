// Live transcription from the microphone: PCM16 at 16 kHz streamed to this server's Realtime session
// (GET /v1/realtime, OpenAI's transcription events), the utterances reported as they are transcribed,
// and the recording kept as a WAV file for the file pipeline (diarization) afterwards.

import { ApiError, apiKey, postJSON } from "./api.js";
import { RATE, base64, pcm16, wavFile } from "./wav.js";

const KEY_PROTOCOL = "openai-insecure-api-key.";
const FINISH_TIMEOUT_MS = 20000; // how long stop() waits for the last utterances' transcripts

async function microphone() {
  if (!window.isSecureContext || !navigator.mediaDevices?.getUserMedia) {
    throw new ApiError(0, "Recording needs a secure page: open it over HTTPS or on localhost.");
  }
  try {
    return await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1 } });
  } catch (error) {
    const sentence = error.name === "NotFoundError"
      ? "No microphone was found."
      : "The browser did not allow the microphone: allow it for this page, then press Record again.";
    throw new ApiError(0, sentence);
  }
}

async function protocols() {
  // A browser cannot set an Authorization header on a WebSocket: with a key, the page asks for a
  // short-lived client secret and offers it as a subprotocol (OpenAI's way).
  if (!apiKey.get()) return ["realtime"];
  const { body } = await postJSON("/v1/realtime/client_secrets", { expires_after: { anchor: "created_at", seconds: 60 } });
  return ["realtime", KEY_PROTOCOL + body.value];
}

function connect(offered) {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/v1/realtime?intent=transcription`, offered);
  return new Promise((resolve, reject) => {
    socket.onopen = () => resolve(socket);
    socket.onerror = () => reject(new ApiError(0, "The live session could not start: the server refused it " +
      "(too many live sessions, still loading, or the key was not accepted). Try again shortly."));
  });
}

/**
 * One recording. `onUtterance(id, {text, final, failed, committed, speaker})` for each utterance as it
 * changes (`speaker`: with `speakerLabels`, the completed utterance's library name or SPEAKER_NN);
 * `onError(sentence)` for errors the session reports.
 */
export class LiveSession {
  constructor({ language = null, languages = [], speakerLabels = false, onUtterance, onError }) {
    this.language = language;
    this.languages = languages; // detected among these (this server's extension); empty: any
    this.speakerLabels = speakerLabels;
    this.onUtterance = onUtterance;
    this.onError = onError;
    this.blocks = [];
    this.utterances = new Map(); // item id -> {text, final, failed, committed, speaker}
    this.speaking = false;
  }

  async start() {
    this.stream = await microphone();
    try {
      this.socket = await connect(await protocols());
      this.socket.onmessage = (message) => this.receive(JSON.parse(message.data));
      this.socket.onclose = (event) => {
        this.pendingDone?.(); // nothing more will arrive
        if (!this.stopping) this.onError(`The live session ended: ${event.reason || "the connection closed"}.`);
      };
      const transcription = {
        ...(this.language ? { language: this.language } : {}),
        ...(this.languages.length ? { languages: this.languages } : {}),
        ...(this.speakerLabels ? { speaker_labels: true } : {}),
      };
      this.send({ type: "session.update", session: { type: "transcription", audio: { input: {
        format: { type: "audio/pcm", rate: RATE }, transcription, turn_detection: { type: "server_vad" } } } } });
      this.context = new AudioContext({ sampleRate: RATE });
      await this.context.audioWorklet.addModule("/ui/static/pcm-worklet.js");
      this.node = new AudioWorkletNode(this.context, "pcm-capture");
      this.node.port.onmessage = (event) => this.capture(event.data);
      this.source = this.context.createMediaStreamSource(this.stream);
      this.source.connect(this.node);
      this.node.connect(this.context.destination); // silent output: keeps the node processing
      await this.context.resume();
    } catch (error) {
      this.release();
      throw error;
    }
  }

  /** Microphone, audio graph and session closed, whatever was opened. */
  release() {
    this.stopping = true;
    this.stream?.getTracks().forEach((track) => track.stop());
    this.context?.close().catch(() => {});
    this.socket?.close(1000);
  }

  capture(data) {
    if (data instanceof Float32Array) this.append(data);
    else if (data.flushed) {
      this.append(data.flushed);
      this.flushed?.();
    }
  }

  send(event) {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(event));
  }

  append(floats) {
    if (!floats.length) return;
    const block = pcm16(floats);
    this.blocks.push(block);
    this.send({ type: "input_audio_buffer.append", audio: base64(block) });
  }

  update(id, change) {
    const utterance = { text: "", final: false, failed: false, committed: false, ...this.utterances.get(id), ...change };
    this.utterances.set(id, utterance);
    this.onUtterance(id, utterance);
    if (this.pendingDone && this.allFinal()) this.pendingDone();
  }

  receive(event) {
    switch (event.type) {
      case "input_audio_buffer.speech_started":
        this.speaking = true;
        this.update(event.item_id, {});
        break;
      case "input_audio_buffer.speech_stopped":
        this.speaking = false;
        break;
      case "input_audio_buffer.committed":
        this.speaking = false;
        this.update(event.item_id, { committed: true });
        break;
      case "conversation.item.input_audio_transcription.delta":
        this.update(event.item_id, { text: (this.utterances.get(event.item_id)?.text || "") + event.delta });
        break;
      case "conversation.item.input_audio_transcription.completed":
        this.update(event.item_id, { text: event.transcript, final: true, speaker: event.speaker ?? null });
        break;
      case "conversation.item.input_audio_transcription.failed":
        this.update(event.item_id, { final: true, failed: true });
        this.onError(`An utterance could not be transcribed: ${event.error?.message || "unknown error"}.`);
        break;
      case "error":
        if (event.error?.code === "input_audio_buffer_commit_empty") {
          // Stop's commit found under 100 ms of speech: that utterance will never be transcribed.
          this.commitRefused = true;
          if (this.pendingDone && this.allFinal()) this.pendingDone();
        } else {
          this.onError(event.error?.message || "error");
        }
        break;
      default:
    }
  }

  /** Every utterance transcribed (or failed), but one that stop's refused commit left uncommitted. */
  allFinal() {
    return [...this.utterances.values()].every((u) => u.final || (this.commitRefused && !u.committed));
  }

  /** Stop recording, wait for the last transcripts, close the session: the recording as a WAV file. */
  async stop() {
    this.stopping = true;
    if (this.node) {
      this.source.disconnect(); // no more input: the flush is the last block
      await new Promise((resolve) => {
        this.flushed = resolve;
        this.node.port.postMessage("flush");
        setTimeout(resolve, 1000);
      });
    }
    if (this.speaking) this.send({ type: "input_audio_buffer.commit" }); // stopped mid-sentence
    if (this.utterances.size && !this.allFinal() && this.socket?.readyState === WebSocket.OPEN) {
      await new Promise((resolve) => {
        this.pendingDone = resolve;
        setTimeout(resolve, FINISH_TIMEOUT_MS);
      });
    }
    this.release();
    return wavFile(this.blocks);
  }
}
