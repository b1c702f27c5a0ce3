// ESLint over the app's browser code (transformer/explorer/static/*.js, vendor/ left out), run by
// tests/test_js_lint.py: only unused code (no-unused-vars) and names defined nowhere (no-undef); no style rules.
import globals from "globals";

export default [
  {
    files: ["transformer/explorer/static/*.js"],
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
