// ESLint over the app's browser code (the shared modules in transformer/explorer/static/*.js, vendor/ left out, and
// each panel's in transformer/explorer/panels/*/*.js), run by
// tests/test_js_lint.py: only unused code (no-unused-vars) and names defined nowhere (no-undef); no style rules.
import globals from "globals";

export default [
  {
    files: ["transformer/explorer/static/*.js", "transformer/explorer/panels/*/*.js"],
    languageOptions: {
      ecmaVersion: "latest",
      sourceType: "module",
      globals: globals.browser,
    },
    linterOptions: {reportUnusedDisableDirectives: "error"},
    rules: {
      "no-unused-vars": ["error", {args: "all", argsIgnorePattern: "^_", caughtErrors: "all", caughtErrorsIgnorePattern: "^_"}],
      "no-undef": "error",
    },
  },
];
