/**
 * The console's one stylesheet, served from memory (the build is `tsc` alone, so assets ship as
 * modules). Status colours carry meaning and nothing else does: amber waits for a person, blue
 * waits for something outside, red is a refusal or a failure, green an approval, grey the end.
 */
export const STYLES = `
:root {
  --bg: #f5f6f8; --panel: #ffffff; --ink: #1c2430; --muted: #5b6675; --line: #dde1e7;
  --brand: #1f3a5f; --brand-ink: #ffffff; --link: #1d4ed8; --focus: #f59e0b;
  --amber-bg: #fff4d6; --amber-ink: #7a4b00; --blue-bg: #e3efff; --blue-ink: #1d4380;
  --red-bg: #fde4e4; --red-ink: #8f1d1d; --green-bg: #dff5e6; --green-ink: #155c2f;
  --grey-bg: #eceef1; --grey-ink: #414b58;
  --radius: 6px; --shadow: 0 1px 2px rgba(16, 24, 40, .06);
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 15px; line-height: 1.45; color: var(--ink); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--link); }
a:hover { text-decoration-thickness: 2px; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
h2 { font-size: 1.1rem; margin: 0 0 .75rem; }
h3 { font-size: 1rem; margin: 1rem 0 .5rem; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85rem; }
pre { background: #f0f2f5; border: 1px solid var(--line); border-radius: var(--radius); padding: .75rem; overflow: auto; max-height: 28rem; white-space: pre-wrap; word-break: break-word; }
.skip { position: absolute; left: -999px; top: 0; background: var(--panel); padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; }

.topbar { background: var(--brand); color: var(--brand-ink); }
.topbar-inner { max-width: 1440px; margin: 0 auto; display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .6rem 1rem; }
.product { font-weight: 700; letter-spacing: .01em; color: var(--brand-ink); text-decoration: none; }
.product small { font-weight: 400; opacity: .8; margin-left: .35rem; }
.nav { display: flex; flex-wrap: wrap; gap: .25rem; flex: 1; }
.nav a { color: var(--brand-ink); text-decoration: none; padding: .35rem .7rem; border-radius: var(--radius); opacity: .85; white-space: nowrap; }
.nav a:hover { background: rgba(255,255,255,.12); opacity: 1; }
.nav a[aria-current="page"] { background: rgba(255,255,255,.2); opacity: 1; font-weight: 600; }
.who { display: flex; align-items: center; gap: .6rem; font-size: .9rem; }
.who form { margin: 0; }
.who button { background: transparent; color: var(--brand-ink); border: 1px solid rgba(255,255,255,.5); }

main { max-width: 1440px; margin: 0 auto; padding: 1.25rem 1rem 3rem; }
.page-head { display: flex; flex-wrap: wrap; align-items: flex-end; justify-content: space-between; gap: .75rem; margin-bottom: 1rem; }
.page-head p { margin: 0; color: var(--muted); }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: var(--radius); box-shadow: var(--shadow); padding: 1rem; margin-bottom: 1rem; min-width: 0; }
.panel > h2:first-child { margin-top: 0; }
.grid { display: grid; gap: 1rem; grid-template-columns: minmax(0, 1fr); align-items: start; }
@media (min-width: 1024px) { .grid-case { grid-template-columns: minmax(0, 2fr) minmax(320px, 1fr); } }
.muted { color: var(--muted); }
.small { font-size: .85rem; }
.notice { border-radius: var(--radius); padding: .7rem 1rem; margin-bottom: 1rem; border: 1px solid; }
.notice-ok { background: var(--green-bg); color: var(--green-ink); border-color: #a6dcb8; }
.notice-error { background: var(--red-bg); color: var(--red-ink); border-color: #f2b1b1; }
.notice-info { background: var(--blue-bg); color: var(--blue-ink); border-color: #b3cdf5; }
.secret { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; background: #fffbea; border: 1px dashed #d6a700; padding: .75rem; border-radius: var(--radius); word-break: break-all; }

.table-wrap { overflow-x: auto; border: 1px solid var(--line); border-radius: var(--radius); background: var(--panel); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .55rem .75rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: .78rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); background: #f8f9fb; white-space: nowrap; }
tbody tr:last-child td { border-bottom: 0; }
tbody tr:hover { background: #f8fafc; }
tbody tr.selected { background: #fff8e6; box-shadow: inset 3px 0 0 var(--focus); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.case-link { font-weight: 600; }
.kv { display: grid; grid-template-columns: minmax(8rem, max-content) minmax(0, 1fr); gap: .3rem 1rem; margin: 0; }
.kv dt { color: var(--muted); }
.kv dd { margin: 0; word-break: break-word; }

.badge { display: inline-block; padding: .1rem .5rem; border-radius: 999px; font-size: .78rem; font-weight: 600; white-space: nowrap; border: 1px solid transparent; }
.badge-amber { background: var(--amber-bg); color: var(--amber-ink); border-color: #f0d38a; }
.badge-blue { background: var(--blue-bg); color: var(--blue-ink); border-color: #b3cdf5; }
.badge-red { background: var(--red-bg); color: var(--red-ink); border-color: #f2b1b1; }
.badge-green { background: var(--green-bg); color: var(--green-ink); border-color: #a6dcb8; }
.badge-grey { background: var(--grey-bg); color: var(--grey-ink); border-color: #d3d7dd; }
.chip { display: inline-flex; align-items: center; gap: .25rem; background: var(--grey-bg); border: 1px solid #d3d7dd; border-radius: 999px; padding: .1rem .25rem .1rem .6rem; margin: 0 .3rem .3rem 0; font-size: .85rem; }
.chip form { margin: 0; }
.chip button { padding: 0 .4rem; border: 0; background: transparent; color: var(--muted); font-size: 1rem; line-height: 1.2; }

.tabs { display: flex; flex-wrap: wrap; gap: .25rem; border-bottom: 1px solid var(--line); margin-bottom: 1rem; }
.tabs a { padding: .5rem .9rem; text-decoration: none; color: var(--muted); border-bottom: 3px solid transparent; margin-bottom: -1px; }
.tabs a[aria-current="page"] { color: var(--ink); border-bottom-color: var(--brand); font-weight: 600; }
.tabs .count { font-size: .8rem; color: var(--muted); margin-left: .25rem; }

form.stack { display: grid; gap: .75rem; }
.filters { display: flex; flex-wrap: wrap; gap: .75rem; align-items: flex-end; margin-bottom: 1rem; }
label.field { display: block; min-width: 0; font-size: .85rem; font-weight: 600; color: var(--ink); }
label.field > input, label.field > select, label.field > textarea { display: block; margin-top: .3rem; font-weight: 400; }
.comment-body { white-space: pre-wrap; overflow-wrap: anywhere; }
p.overdue { color: var(--red-ink); font-weight: 600; }
td.overdue { color: var(--red-ink); font-weight: 600; }
tr:has(td.overdue) { background: var(--red-bg); }
.filters .field.search { width: 22rem; }
.saved-filters { display: flex; flex-wrap: wrap; align-items: center; gap: .4rem; margin: .5rem 0 1rem; }
.saved-filters .inline-form { display: flex; align-items: flex-end; gap: .4rem; margin-left: auto; }
.comments { list-style: none; padding: 0; margin: 0 0 .75rem; }
.comments li { border-left: 3px solid var(--line); padding: .25rem .6rem; margin-bottom: .5rem; }
ol.attempts { margin: 0; padding-left: 0; list-style: none; }
.field-error { display: block; margin-top: .25rem; font-size: .8rem; font-weight: 600; color: var(--red-ink); }
.hint { font-size: .8rem; color: var(--muted); font-weight: 400; margin-left: .25rem; }
input[type=text], input[type=email], input[type=password], input[type=url], input[type=number], input[type=datetime-local], select, textarea {
  font: inherit; color: inherit; padding: .45rem .6rem; border: 1px solid #b9c1cc; border-radius: var(--radius); background: #fff; width: 100%; min-height: 2.3rem;
}
textarea { min-height: 5rem; resize: vertical; }
.filters .field { width: 11rem; }
.checks { display: flex; flex-wrap: wrap; gap: .4rem 1rem; border: 0; padding: 0; margin: 0; }
.checks legend { font-size: .85rem; font-weight: 600; margin-bottom: .25rem; padding: 0; }
.checks label { display: inline-flex; gap: .35rem; align-items: center; font-weight: 400; }
button, .button { font: inherit; font-weight: 600; cursor: pointer; border-radius: var(--radius); padding: .45rem .9rem; border: 1px solid #b9c1cc; background: #fff; color: var(--ink); text-decoration: none; display: inline-block; min-height: 2.3rem; }
button:hover, .button:hover { background: #f1f3f6; }
.primary { background: var(--brand); color: #fff; border-color: var(--brand); }
.primary:hover { background: #17304f; }
.danger { background: #fff; color: var(--red-ink); border-color: #e2a0a0; }
.danger:hover { background: var(--red-bg); }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.actions form { margin: 0; }
td > .actions, td > form.actions { flex-wrap: nowrap; }
.pager { display: flex; gap: .5rem; justify-content: space-between; align-items: center; margin-top: .75rem; flex-wrap: wrap; }

.trace { list-style: none; margin: 0; padding: 0; counter-reset: step; }
.trace > li { position: relative; padding: 0 0 1rem 2.2rem; border-left: 2px solid var(--line); margin-left: .8rem; }
.trace > li:last-child { border-left-color: transparent; padding-bottom: 0; }
.trace > li::before { counter-increment: step; content: counter(step); position: absolute; left: -.85rem; top: 0; width: 1.6rem; height: 1.6rem; border-radius: 50%; background: var(--panel); border: 2px solid var(--brand); display: grid; place-items: center; font-size: .75rem; font-weight: 700; }
.trace > li.failed::before { border-color: var(--red-ink); color: var(--red-ink); }
.trace > li.waiting::before { border-color: var(--blue-ink); color: var(--blue-ink); }
.trace .why { margin: .3rem 0; padding-left: 1.1rem; }
.trace .why li { margin: .1rem 0; }
.rfi { border: 1px solid var(--line); border-radius: var(--radius); padding: .75rem; margin-bottom: .75rem; }
.rfi header { display: flex; flex-wrap: wrap; justify-content: space-between; gap: .5rem; }
.hit { border: 1px solid var(--line); border-radius: var(--radius); padding: .75rem; margin-bottom: .75rem; }
.hit header { display: flex; flex-wrap: wrap; align-items: baseline; gap: .4rem; margin-bottom: .4rem; }
.notice h2 { font-size: 1rem; margin: 0 0 .3rem; }
.docs { display: grid; gap: .75rem; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); margin-top: .5rem; }
.doc { border: 1px solid var(--line); border-radius: var(--radius); padding: .5rem; background: #fafbfc; }
.doc img { max-width: 100%; max-height: 320px; display: block; margin: 0 auto .4rem; }
.doc iframe { width: 100%; height: 360px; border: 1px solid var(--line); background: #fff; }
details > summary { cursor: pointer; font-weight: 600; }
details[open] > summary { margin-bottom: .5rem; }
.answer-row { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 2fr); gap: .5rem; }
.auth { max-width: 26rem; margin: 8vh auto; }
.auth .panel { padding: 1.5rem; }
.auth h1 { margin-bottom: 1rem; }
.empty { padding: 2rem 1rem; text-align: center; color: var(--muted); }
kbd { border: 1px solid #b9c1cc; border-bottom-width: 2px; border-radius: 4px; padding: 0 .3rem; font-size: .8rem; background: #fff; }
@media (max-width: 640px) {
  main { padding: 1rem .6rem 2rem; }
  .topbar-inner { gap: .4rem 1rem; }
  .nav { order: 3; flex-basis: 100%; }
  .who { margin-left: auto; }
  .filters .field { width: calc(50% - .4rem); }
  .filters .actions { width: 100%; }
  .hide-narrow { display: none; }
  th, td { padding: .5rem; }
  .answer-row { grid-template-columns: minmax(0, 1fr); }
}
`;
