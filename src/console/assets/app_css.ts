// The console's stylesheet (served at /console/app.css).
// Plain text served as is: no backquote or dollar-brace may appear in it.
export const APP_CSS = String.raw`
:root {
  --fg: #1b1f24;
  --muted: #4a5561;
  --bg: #ffffff;
  --panel: #f3f5f7;
  --line: #c9d1d9;
  --accent: #0b57d0;
  --accent-fg: #ffffff;
  --danger: #b3261e;
  --ok: #146c2e;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  line-height: 1.45;
}
* {
  box-sizing: border-box;
}
body {
  margin: 0;
  color: var(--fg);
  background: var(--bg);
}
.skip {
  position: absolute;
  left: -999px;
}
.skip:focus {
  left: 0.5rem;
  top: 0.5rem;
  background: var(--bg);
  padding: 0.5rem;
  z-index: 10;
}
header {
  display: flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 0.5rem 1.5rem;
  padding: 0.5rem 1rem;
  background: #16324f;
  color: #fff;
}
header a,
header .brand {
  color: #fff;
}
.brand {
  font-weight: 700;
  margin: 0;
}
#nav {
  display: flex;
  flex-wrap: wrap;
  flex: 1;
  align-items: center;
  gap: 0.5rem 1rem;
  justify-content: space-between;
}
#nav ul {
  display: flex;
  flex-wrap: wrap;
  gap: 0.25rem 1rem;
  list-style: none;
  margin: 0;
  padding: 0;
}
#nav a[aria-current="page"] {
  text-decoration-thickness: 3px;
}
.who {
  display: flex;
  align-items: center;
  gap: 0.5rem;
}
main {
  padding: 1rem;
  max-width: 72rem;
  margin: 0 auto;
}
main:focus {
  outline: none;
}
h1 {
  font-size: 1.5rem;
  margin: 0.25rem 0 1rem;
  overflow-wrap: anywhere;
}
h2 {
  font-size: 1.15rem;
  margin: 1.25rem 0 0.5rem;
}
a {
  color: var(--accent);
}
:focus-visible {
  outline: 3px solid #f9a825;
  outline-offset: 2px;
}
button,
.button,
input,
select,
textarea {
  font: inherit;
}
button,
.button {
  display: inline-block;
  padding: 0.4rem 0.8rem;
  border: 1px solid var(--line);
  border-radius: 6px;
  background: var(--panel);
  color: var(--fg);
  cursor: pointer;
  text-decoration: none;
  min-height: 2.5rem;
}
button:disabled {
  opacity: 0.55;
  cursor: not-allowed;
}
.primary {
  background: var(--accent);
  color: var(--accent-fg);
  border-color: var(--accent);
}
.danger {
  color: var(--danger);
  border-color: var(--danger);
  background: #fff;
}
input,
select,
textarea {
  padding: 0.4rem;
  border: 1px solid #6b7785;
  border-radius: 6px;
  min-height: 2.5rem;
  max-width: 100%;
}
input[type="checkbox"],
input[type="radio"] {
  min-height: 0;
  vertical-align: middle;
}
textarea {
  width: 100%;
  font-family: ui-monospace, monospace;
}
.wide {
  width: 100%;
}
label {
  font-weight: 600;
}
form p label,
#new-user label {
  display: block;
}
.inline {
  display: inline;
  font-weight: 400;
  margin-right: 1rem;
}
.row {
  display: flex;
  flex-wrap: wrap;
  gap: 0.5rem;
  align-items: center;
  margin: 0.5rem 0;
}
.toolbar {
  display: flex;
  flex-wrap: wrap;
  gap: 0 2rem;
}
.card {
  background: var(--panel);
  border: 1px solid var(--line);
  border-radius: 8px;
  padding: 1rem;
  margin: 0.75rem 0;
}
.narrow {
  max-width: 26rem;
}
.narrow input {
  width: 100%;
}
.methods {
  border: 0;
  padding: 0;
  margin: 0 0 0.5rem;
}
.drop {
  border-style: dashed;
  text-align: center;
}
.drop.over {
  border-color: var(--accent);
  background: #e3ecfb;
}
.table-wrap {
  overflow-x: auto;
}
table {
  border-collapse: collapse;
  width: 100%;
}
th,
td {
  text-align: left;
  padding: 0.45rem 0.5rem;
  border-bottom: 1px solid var(--line);
  vertical-align: middle;
  overflow-wrap: break-word;
}
td a,
td code {
  overflow-wrap: anywhere;
}
th {
  color: var(--muted);
  font-weight: 600;
}
td.actions,
span.actions {
  display: flex;
  flex-wrap: wrap;
  gap: 0.35rem;
}
.crumbs {
  margin-bottom: 0.75rem;
  overflow-wrap: anywhere;
}
.facts {
  display: grid;
  grid-template-columns: max-content 1fr;
  gap: 0.25rem 1rem;
}
.facts dt {
  font-weight: 600;
}
.facts dd {
  margin: 0;
  overflow-wrap: anywhere;
}
.uploads {
  list-style: none;
  padding: 0;
}
.uploads li {
  display: grid;
  grid-template-columns: 1fr 10rem minmax(6rem, 18rem);
  gap: 0.5rem;
  align-items: center;
  padding: 0.25rem 0;
  overflow-wrap: anywhere;
}
.uploads progress {
  width: 100%;
}
.uploads .failed .state {
  color: var(--danger);
}
.preview {
  max-width: 100%;
  max-height: 24rem;
}
pre.preview {
  overflow: auto;
  background: var(--panel);
  padding: 0.75rem;
  border-radius: 6px;
  white-space: pre-wrap;
}
.notice:empty {
  display: none;
}
.notice {
  margin: 0.5rem 1rem;
  padding: 0.5rem 0.75rem;
  border-radius: 6px;
}
main .notice {
  margin: 0.5rem 0;
}
.notice.ok {
  background: #e6f4ea;
  color: var(--ok);
  border: 1px solid var(--ok);
}
.notice.error {
  background: #fce8e6;
  color: var(--danger);
  border: 1px solid var(--danger);
}
.secret {
  border-color: var(--ok);
}
dialog {
  border: 1px solid var(--line);
  border-radius: 8px;
  max-width: 28rem;
}
dialog::backdrop {
  background: rgba(0, 0, 0, 0.4);
}
.sr-only {
  position: absolute;
  width: 1px;
  height: 1px;
  overflow: hidden;
  clip: rect(0 0 0 0);
  white-space: nowrap;
}
@media (max-width: 40rem) {
  main {
    padding: 0.75rem;
  }
  .uploads li {
    grid-template-columns: 1fr;
  }
  table#objects td:nth-child(4),
  table#objects th:nth-child(4) {
    display: none;
  }
}
.drop input:focus-visible + label {
  outline: 3px solid #f9a825;
  outline-offset: 2px;
}
.charts {
  display: grid;
  grid-template-columns: repeat(auto-fit, minmax(16rem, 1fr));
  gap: 0.75rem;
}
.chart {
  width: 100%;
  height: 6rem;
}
.chart polyline {
  fill: none;
  stroke: var(--accent);
  stroke-width: 2;
}
figure {
  margin: 0;
}
summary {
  cursor: pointer;
  font-weight: 600;
}
.field {
  display: inline-flex;
  flex-wrap: wrap;
  align-items: center;
  gap: 0.5rem;
}
td.time {
  white-space: nowrap;
}
td.target {
  overflow-wrap: anywhere;
}
.hint {
  display: block;
  color: var(--muted);
}
.hint:empty {
  display: none;
}
.rules fieldset {
  border: 0;
  padding: 0;
  margin: 0;
}
.rules legend {
  font-weight: 600;
  padding: 0;
  margin-bottom: 0.5rem;
}
details > summary + * {
  margin-top: 0.5rem;
}
`;
