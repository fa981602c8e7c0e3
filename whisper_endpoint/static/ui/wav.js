// 16 kHz mono PCM16: the samples the live session streams and the WAV files the page makes (the recording,
// a voice's clips for the speaker library).

export const RATE = 16000;

export function pcm16(floats) {
  const out = new Int16Array(floats.length);
  for (let i = 0; i < floats.length; i++) {
    const s = Math.max(-1, Math.min(1, floats[i]));
    out[i] = s < 0 ? s * 0x8000 : s * 0x7fff;
  }
  return out;
}

/** Base64 of bytes (a typed array), in pieces: String.fromCharCode takes a bounded number of arguments. */
export function base64(view) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

/** A mono PCM16 WAV file of the blocks (Int16Arrays). */
export function wavFile(blocks, rate = RATE, name = "recording.wav") {
  const samples = blocks.reduce((n, block) => n + block.length, 0);
  const header = new DataView(new ArrayBuffer(44));
  const text = (offset, value) => [...value].forEach((c, i) => header.setUint8(offset + i, c.charCodeAt(0)));
  text(0, "RIFF");
  header.setUint32(4, 36 + samples * 2, true);
  text(8, "WAVEfmt ");
  header.setUint32(16, 16, true); // fmt chunk size
  header.setUint16(20, 1, true); // PCM
  header.setUint16(22, 1, true); // mono
  header.setUint32(24, rate, true);
  header.setUint32(28, rate * 2, true); // bytes per second
  header.setUint16(32, 2, true); // bytes per frame
  header.setUint16(34, 16, true); // bits per sample
  text(36, "data");
  header.setUint32(40, samples * 2, true);
  return new File([header, ...blocks], name, { type: "audio/wav" });
}
