// The browser pages' icon (a bucket), embedded in the program and served at
// /browse/_assets/icon.svg (`_` cannot start a bucket name, so the path is never a bucket).
export const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<path fill="#1f5fbf" d="M4 7c0-2 5.4-4 12-4s12 2 12 4l-3 20c-.3 1.7-4.3 3-9 3s-8.7-1.3-9-3z"/>
<ellipse cx="16" cy="7" rx="10" ry="2.6" fill="#7fb0ff"/></svg>
`;
