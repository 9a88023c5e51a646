/**
 * The module boundaries of docs/decisions/0020-module-doors.md, checked by `npm run lint`.
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import circle, even inside one folder: split what the two files share into a third.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "module-door",
      comment: "A module is entered only through its index.ts; import what it exports there.",
      severity: "error",
      from: { path: "^src/modules/([^/]+)/" },
      to: {
        path: "^src/modules/[^/]+/",
        pathNot: ["^src/modules/$1/", "^src/modules/[^/]+/index\\.ts$"],
      },
    },
    {
      name: "platform-imports-no-module",
      comment: "The platform is what every feature uses; it knows none of them.",
      severity: "error",
      from: { path: "^src/platform/" },
      to: { path: "^src/(modules|cli)/|^src/(app|worker|main)\\.ts$" },
    },
  ],
  options: {
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
  },
};
