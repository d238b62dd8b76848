// The stylesheet of the /browse pages, embedded in the program (no files to ship, no external
// assets). It is inlined in a <style> element that the Content-Security-Policy allows by hash.
export const BROWSE_CSS = `
:root { color-scheme: light dark; --fg: #1d2330; --muted: #5d6677; --line: #dfe3ea;
  --bg: #ffffff; --hover: #f3f5f9; --accent: #1f5fbf; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e9ef; --muted: #9aa3b2; --line: #2d3340; --bg: #15181e; --hover: #1e232c;
    --accent: #7fb0ff; }
}
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: var(--bg); }
main { max-width: 64rem; margin: 0 auto; padding: 1rem; }
a { color: var(--accent); text-decoration: none; }
a:hover, a:focus { text-decoration: underline; }
h1 { font-size: 1.25rem; margin: 0 0 .75rem; overflow-wrap: anywhere; }
nav.crumbs { font-size: 1.05rem; overflow-wrap: anywhere; }
nav.crumbs .sep { color: var(--muted); padding: 0 .3rem; }
form.search { display: flex; gap: .5rem; margin: .75rem 0 1rem; }
form.search input { flex: 1; min-width: 0; font: inherit; padding: .45rem .6rem;
  border: 1px solid var(--line); border-radius: .4rem; background: var(--bg); color: var(--fg); }
form.search button { font: inherit; padding: .45rem .9rem; border: 1px solid var(--line);
  border-radius: .4rem; background: var(--hover); color: var(--fg); }
ul.entries { list-style: none; margin: 0; padding: 0; border-top: 1px solid var(--line); }
ul.entries li { display: grid; grid-template-columns: 2.75rem minmax(0, 1fr) auto 11rem;
  gap: .25rem .75rem; align-items: center; padding: .45rem .25rem;
  border-bottom: 1px solid var(--line); }
ul.entries li:hover { background: var(--hover); }
.icon { width: 2.5rem; height: 2.5rem; display: flex; align-items: center;
  justify-content: center; color: var(--muted); }
.icon svg { width: 1.5rem; height: 1.5rem; fill: currentColor; }
.icon img { width: 2.5rem; height: 2.5rem; object-fit: cover; border-radius: .25rem; }
.name { overflow-wrap: anywhere; }
.name .private { color: var(--muted); font-size: .85rem; padding-left: .4rem; }
.size, .date { color: var(--muted); font-size: .9rem; white-space: nowrap; text-align: right; }
.dl { font-size: .85rem; padding-left: .6rem; }
.empty, .note { color: var(--muted); padding: 1rem .25rem; }
nav.pager { display: flex; justify-content: space-between; gap: 1rem; padding: 1rem .25rem; }
@media (max-width: 40rem) {
  main { padding: .75rem; }
  ul.entries li { grid-template-columns: 2.75rem minmax(0, 1fr) auto; }
  ul.entries li .date { grid-column: 2 / 4; text-align: left; }
}
`;
