// The few browser globals the page functions of the browser tests touch. They run inside
// Chromium (page.evaluate), but are type-checked with the rest of the project, whose Deno
// types must not be mixed with the DOM library (`lib: "dom"` changes Headers and friends).
// Use them as `(globalThis as unknown as PageGlobals)`: the functions are sent to the browser as
// source text, so they cannot call helpers of this module.
export interface PageElement {
  textContent: string | null;
  complete?: boolean;
  naturalWidth?: number;
}

export interface PageDocument {
  title: string;
  scripts: { length: number };
  documentElement: { scrollWidth: number };
  getElementById(id: string): PageElement | null;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): { length: number };
}

export interface PageGlobals {
  document: PageDocument;
  innerWidth: number;
  getComputedStyle(element: PageElement): { listStyleType: string };
}
