// The result: the transcript by speaker (a colour each, names editable), the speaker timeline, the
// player (a click on a word seeks; the word being played is highlighted), downloads and warnings.

import { postJSON } from "./api.js";
import { blocksOf, named } from "./blocks.js";
import { clock, drawTimeline } from "./timeline.js";
import { clipSpans, monoSamples, wavClips } from "./voice-clips.js";

// Okabe and Ito's palette: told apart with every common colour-vision deficiency.
const COLOURS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#8c6d1f", "#000000"];
const LOW_CONFIDENCE = 0.5; // words under this are 5 to 23 times as likely to be wrong (README "Confidence")

const $ = (id) => document.getElementById(id);

function make(tag, attributes = {}, text = null) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== null) node.textContent = text;
  return node;
}

function save(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = make("a", { href: url, download: filename });
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export class ResultView {
  constructor({ onError }) {
    this.onError = onError;
    this.player = $("player");
    this.player.addEventListener("timeupdate", () => this.follow());
    this.player.addEventListener("play", () => this.animate());
    $("transcript").addEventListener("click", (event) => {
      const target = event.target.closest("[data-start]");
      if (target) this.seek(Number(target.dataset.start));
    });
    window.addEventListener("resize", () => this.result && this.drawTimeline());
  }

  /** A download button per format the server renders (GET /ui/config.json's `downloads`), then json. */
  setDownloads(formats) {
    for (const format of [...formats, "json"]) {
      const button = make("button", { type: "button", id: `download-${format}`, "data-testid": `download-${format}` }, format);
      button.addEventListener("click", () => this.download(format));
      $("downloads").append(button);
    }
  }

  /** The server's speaker library (GET /ui/config.json's `speaker_library`: its clip rules), or null. */
  setLibrary(library) {
    this.library = library;
  }

  /** Show `result`; `audio`: a File or Blob to play along, or null; `name`: the audio's file name;
   * `jobId`: the job it came from, if any. */
  show(result, audio, name = "transcript", jobId = null) {
    this.result = result;
    // A job's speakers are saved to the library from the voices the job kept; another result's from its
    // audio, cut here. Names the library gave are in it already.
    this.jobId = jobId;
    this.audio = audio;
    this.samples = null; // the audio decoded, once a voice is saved from it
    this.fromLibrary = new Set((result.speaker_matches || []).map((found) => found.name));
    this.baseName = name.replace(/\.[^.]+$/, "") || "transcript";
    const view = blocksOf(result);
    this.blocks = view.blocks;
    this.speakers = view.speakers;
    this.words = view.words;
    this.names = Object.fromEntries(this.speakers.map((label) => [label, label]));
    this.colours = Object.fromEntries(this.speakers.map((label, i) => [label, COLOURS[i % COLOURS.length]]));
    this.current = -1;
    this.setAudio(audio);
    $("result").hidden = false;
    this.drawSpeakers();
    this.drawTimeline();
    this.drawTranscript();
    this.drawWarnings();
  }

  setAudio(audio) {
    if (this.audioUrl) URL.revokeObjectURL(this.audioUrl);
    this.audioUrl = audio ? URL.createObjectURL(audio) : null;
    if (this.audioUrl) this.player.src = this.audioUrl;
    else this.player.removeAttribute("src");
    this.player.hidden = !audio;
    $("player-note").hidden = Boolean(audio);
  }

  drawSpeakers() {
    const list = $("speakers");
    list.replaceChildren();
    list.hidden = !this.speakers.length;
    for (const label of this.speakers) {
      const item = make("label", { class: "speaker" });
      item.style.setProperty("--speaker", this.colours[label]); // CSSOM, which the page's CSP allows
      item.append(make("span", { class: "swatch", "aria-hidden": "true" }));
      const input = make("input", {
        type: "text", value: label, maxlength: "100", "data-testid": "speaker-name", "data-speaker": label,
        "aria-label": `Name of ${label}`,
      });
      input.addEventListener("input", () => this.rename(label, input.value.trim() || label));
      item.append(input);
      const savable = this.library && (this.jobId || this.audio) && !this.fromLibrary.has(label);
      if (savable) item.append(this.rememberButton(label));
      list.append(item);
    }
  }

  /** "Remember this voice": the renamed speaker enrolled in the server's library, from the job's kept voice
   * or clips of its turns. */
  rememberButton(label) {
    const button = make("button", {
      type: "button", class: "remember", "data-testid": "remember-voice", "data-speaker": label,
      title: "Save this voice to the speaker library under its name: later recordings name it",
    }, "Remember this voice");
    button.addEventListener("click", async () => {
      const name = this.names[label];
      if (name === label) {
        button.textContent = "Rename first";
        return;
      }
      button.disabled = true;
      try {
        await postJSON("/v1/speakers", await this.enrolment(name, label));
        button.textContent = `Remembered as ${name}`;
      } catch (error) {
        button.textContent = error.message;
        button.disabled = false;
      }
    });
    return button;
  }

  /** The body of POST /v1/speakers that enrols `label` as `name`. */
  async enrolment(name, label) {
    if (this.jobId) return { name, job_id: this.jobId, speaker: label };
    this.samples ||= monoSamples(this.audio).catch((error) => {
      this.samples = null; // another click tries again
      throw new Error(`This browser could not decode the audio to cut the voice's clips (${error.message}).`);
    });
    // The diarization's own turns where the result has them; else the transcript's turns by speaker.
    const turns = this.result.speaker_turns || this.blocks;
    return { name, audio: await wavClips(await this.samples, clipSpans(turns, label, this.library)) };
  }

  rename(label, name) {
    this.names[label] = name;
    for (const node of document.querySelectorAll(".speaker-name")) {
      if (node.dataset.speaker === label) node.textContent = name;
    }
    this.drawTimeline();
  }

  drawTimeline() {
    const svg = $("speaker-timeline");
    svg.toggleAttribute("hidden", !this.speakers.length); // an SVG element has no .hidden property
    if (!this.speakers.length) return;
    this.timeline = drawTimeline(svg, {
      blocks: this.blocks, speakers: this.speakers, duration: this.result.duration, names: this.names,
      colours: this.colours, onSeek: (seconds) => this.seek(seconds),
    });
  }

  drawTranscript() {
    const root = $("transcript");
    root.replaceChildren();
    this.wordNodes = [];
    for (const block of this.blocks) {
      const turn = make("article", { class: "turn" });
      const heading = make("header");
      const time = make("button", { type: "button", class: "seek", "data-start": block.start,
        "aria-label": `Go to ${clock(block.start)} in the player` }, clock(block.start));
      heading.append(time);
      if (block.speaker !== null) {
        turn.style.setProperty("--speaker", this.colours[block.speaker]);
        turn.dataset.speaker = block.speaker;
        heading.append(make("span", { class: "speaker-name", "data-speaker": block.speaker }, this.names[block.speaker]));
      }
      const text = make("p");
      if (block.words.length) {
        for (const word of block.words) {
          // Whisper's words carry their leading space: it goes before the word, not inside its highlight.
          const space = word.text.match(/^\s*/)[0];
          if (space) text.append(space);
          const node = make("span", { class: "word", "data-start": word.start, "data-end": word.end },
            word.text.slice(space.length));
          if (word.probability !== null && word.probability < LOW_CONFIDENCE) {
            node.classList.add("unsure");
            node.title = `confidence ${Math.round(word.probability * 100)}%`;
          }
          this.wordNodes[word.index] = node;
          text.append(node);
        }
      } else {
        text.append(make("span", { "data-start": block.start }, block.text));
      }
      turn.append(heading, text);
      root.append(turn);
    }
  }

  drawWarnings() {
    const list = $("warnings");
    list.replaceChildren(...(this.result.warnings || []).map((warning) => make("li", {}, warning)));
    list.hidden = !list.children.length;
  }

  seek(seconds) {
    if (!this.player.src) return;
    this.player.currentTime = seconds;
    this.follow();
  }

  animate() {
    const step = () => {
      this.follow();
      if (!this.player.paused) requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  }

  /** Highlight the word being played and move the playhead. */
  follow() {
    const now = this.player.currentTime;
    this.timeline?.setTime(now);
    let low = 0;
    let high = this.words.length - 1;
    let found = -1;
    while (low <= high) { // the last word that starts at or before now
      const middle = (low + high) >> 1;
      if (this.words[middle].start <= now) {
        found = middle;
        low = middle + 1;
      } else high = middle - 1;
    }
    if (found >= 0 && now > this.words[found].end + 0.3) found = -1; // in a pause
    if (found === this.current) return;
    this.wordNodes[this.current]?.classList.remove("current");
    this.wordNodes[found]?.classList.add("current");
    this.current = found;
  }

  async download(format) {
    const result = named(this.result, this.names);
    const filename = `${this.baseName}.${format}`;
    if (format === "json") {
      save(new Blob([JSON.stringify(result, null, 2)], { type: "application/json" }), filename);
      return;
    }
    try {
      const { text } = await postJSON(`/formats/${format}`, result);
      save(new Blob([text], { type: "text/plain;charset=utf-8" }), filename);
    } catch (error) {
      this.onError(error);
    }
  }
}
