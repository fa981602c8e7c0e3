// "Remember this voice" for a result whose audio is in this tab (a file sent to POST /predict, or the
// recording): where the speaker speaks alone longest (the diarization's turns, return_speaker_turns), cut
// from that audio as the browser decodes it (16 kHz mono), as WAV clips for POST /v1/speakers. The server
// judges the clips (their length and count, as for known_speakers); the page only picks the likeliest
// stretches and shows the server's answer.

import { RATE, base64, pcm16, wavFile } from "./wav.js";

/** The audio's samples at 16 kHz, its channels mixed (decodeAudioData resamples to its context's rate). */
export async function monoSamples(audio) {
  const buffer = await new OfflineAudioContext(1, 1, RATE).decodeAudioData(await audio.arrayBuffer());
  const mono = new Float32Array(buffer.length);
  for (let c = 0; c < buffer.numberOfChannels; c++) {
    const channel = buffer.getChannelData(c);
    for (let i = 0; i < mono.length; i++) mono[i] += channel[i] / buffer.numberOfChannels;
  }
  return mono;
}

/** The parts of `turn` no other speaker's turn overlaps ({start, end}): a clip of one voice alone. */
function alone(turn, turns) {
  let parts = [{ start: turn.start, end: turn.end }];
  for (const other of turns) {
    if (other.speaker === turn.speaker) continue;
    parts = parts.flatMap((part) => (other.end <= part.start || other.start >= part.end ? [part] : [
      { start: part.start, end: other.start }, { start: other.end, end: part.end }].filter((p) => p.end > p.start)));
  }
  return parts;
}

/**
 * Where `speaker`'s clips lie ({start, end} in seconds), from `turns` ({speaker, start, end}: the
 * diarization's own turns, which overlap where two speak at once): the longest stretches where it speaks
 * alone of at least `shortest_s`, at most `count`, each cut to its first `longest_s`. A speaker with no
 * stretch that long gets its longest one, for the server to refuse with its reason (the clip's length).
 */
export function clipSpans(turns, speaker, { shortest_s, longest_s, count }) {
  const parts = turns.filter((turn) => turn.speaker === speaker).flatMap((turn) => alone(turn, turns))
    .sort((a, b) => (b.end - b.start) - (a.end - a.start));
  const long = parts.filter((part) => part.end - part.start >= shortest_s);
  return (long.length ? long.slice(0, count) : parts.slice(0, 1))
    .map((part) => ({ start: part.start, end: Math.min(part.end, part.start + longest_s) }));
}

/** The spans of `samples` as base64 WAV files (the body's `audio`). */
export function wavClips(samples, spans) {
  return Promise.all(spans.map(async ({ start, end }) => {
    const piece = samples.subarray(Math.round(start * RATE), Math.round(end * RATE));
    return base64(new Uint8Array(await wavFile([pcm16(piece)], RATE, "clip.wav").arrayBuffer()));
  }));
}
