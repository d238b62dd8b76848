// The console's page (served at /console/).
// Plain text served as is: no backquote or dollar-brace may appear in it.
export const INDEX_HTML = String.raw`
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Console</title>
<link rel="stylesheet" href="/console/app.css">
<link rel="icon" href="/console/icon.svg" type="image/svg+xml">
<script src="/console/app.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<p class="brand">Storage console</p>
<nav id="nav" aria-label="Main"></nav>
</header>
<div id="status" class="notice" role="status" aria-live="polite"></div>
<div id="alert" class="notice" role="alert"></div>
<main id="main" tabindex="-1"><p>Loading…</p></main>
<noscript><p>The console needs JavaScript. The storage protocol and /browse pages work without it.</p></noscript>
</body>
</html>
`;
