// The viewer's only script: no build step, nothing from the network, nothing inline.
"use strict";

// The project switcher goes to the chosen project's timeline.
for (const select of document.querySelectorAll("select[data-go]")) {
  select.addEventListener("change", () => { window.location.assign(select.value); });
}

// New timeline rows while the page is open (live.py). The rows come rendered and escaped by
// the server, as the page's own rows do; they are parsed into a template, never run.
const timeline = document.querySelector("[data-live]");
if (timeline && window.EventSource) {
  const pending = document.getElementById("pending");
  const source = new EventSource(timeline.dataset.live);
  const parse = (html) => {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  };
  source.addEventListener("rows", (event) => {
    const rows = parse(event.data);
    for (const row of rows.querySelectorAll("li.row")) row.classList.add("arrived");
    timeline.prepend(rows);
    const empty = document.querySelector("p.empty");
    if (empty) empty.remove();
  });
  source.addEventListener("pending", (event) => {
    pending.replaceChildren(parse(event.data));
  });
  window.addEventListener("pagehide", () => source.close());
}
