// Who spoke when, drawn as SVG: one row per speaker, a bar per turn, and a playhead; a click seeks.

const SVG = "http://www.w3.org/2000/svg";
const ROW = 22;
const LABEL = 120; // the names' column, in pixels (at most a fifth of a phone's width)

function element(name, attributes, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  parent?.appendChild(node);
  return node;
}

export function clock(seconds) {
  const whole = Math.max(0, Math.floor(seconds));
  const minutes = Math.floor(whole / 60);
  return `${minutes}:${String(whole % 60).padStart(2, "0")}`;
}

/**
 * Draw `blocks` of `speakers` into `svg` (names: label -> name, colours: label -> CSS colour).
 * Returns {setTime(seconds)} for the playhead. `onSeek(seconds)` on a click.
 */
export function drawTimeline(svg, { blocks, speakers, duration, names, colours, onSeek }) {
  svg.replaceChildren();
  const width = Math.max(280, svg.clientWidth || svg.parentElement?.clientWidth || 800);
  const label = Math.min(LABEL, Math.round(width / 5));
  const height = speakers.length * ROW + 18;
  const length = Math.max(duration || 0, ...blocks.map((block) => block.end), 0.001);
  const x = (seconds) => label + (seconds / length) * (width - label - 8);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", String(height));
  speakers.forEach((label, row) => {
    const group = element("g", { "data-speaker": label, class: "timeline-row" }, svg);
    const name = element("text", { x: 4, y: row * ROW + 15, class: "timeline-name" }, group);
    name.textContent = names[label] || label;
    for (const block of blocks.filter((item) => item.speaker === label)) {
      const bar = element("rect", {
        x: x(block.start), y: row * ROW + 3, width: Math.max(1.5, x(block.end) - x(block.start)), height: ROW - 6,
        rx: 3, fill: colours[label], "data-start": block.start, class: "timeline-turn",
      }, group);
      element("title", {}, bar).textContent = `${names[label] || label}: ${clock(block.start)}–${clock(block.end)}`;
    }
  });
  const axis = speakers.length * ROW + 14;
  for (const seconds of [0, length / 2, length]) {
    const tick = element("text", { x: x(seconds), y: axis, class: "timeline-tick" }, svg);
    tick.textContent = clock(seconds);
  }
  const playhead = element("line", { x1: label, x2: label, y1: 0, y2: speakers.length * ROW, class: "playhead" }, svg);
  svg.onclick = (event) => {
    const box = svg.getBoundingClientRect();
    const px = ((event.clientX - box.left) / box.width) * width;
    if (px >= label) onSeek(((px - label) / (width - label - 8)) * length);
  };
  return {
    setTime(seconds) {
      const at = x(Math.min(seconds, length));
      playhead.setAttribute("x1", at);
      playhead.setAttribute("x2", at);
    },
  };
}
