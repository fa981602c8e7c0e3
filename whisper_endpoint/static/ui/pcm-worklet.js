// The microphone's first channel, posted to the page in 100 ms blocks of float samples (the
// AudioContext runs at the session's rate, so no resampling happens here). "flush" posts what is left
// as {flushed: samples}, the last message the page waits for.

class PcmCapture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.block = new Float32Array(Math.round(sampleRate / 10));
    this.filled = 0;
    this.port.onmessage = (event) => {
      if (event.data === "flush") {
        this.port.postMessage({ flushed: this.block.slice(0, this.filled) });
        this.filled = 0;
      }
    };
  }

  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (!channel) return true;
    let offset = 0;
    while (offset < channel.length) {
      const take = Math.min(channel.length - offset, this.block.length - this.filled);
      this.block.set(channel.subarray(offset, offset + take), this.filled);
      this.filled += take;
      offset += take;
      if (this.filled === this.block.length) {
        this.port.postMessage(this.block.slice());
        this.filled = 0;
      }
    }
    return true;
  }
}

registerProcessor("pcm-capture", PcmCapture);
