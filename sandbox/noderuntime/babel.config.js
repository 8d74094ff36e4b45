// jest compiles TypeScript tests with Babel, for the running Node.js.
module.exports = {
  presets: [["@babel/preset-env", { targets: { node: "current" } }], "@babel/preset-typescript"],
};
