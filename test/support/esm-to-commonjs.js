/* Jest transform for the ES-module-only packages of NestJS 12 (and their own ESM dependencies).
 * Node 20.19+ loads them from CommonJS through require(esm), but jest's module sandbox does not
 * (jest supports it only on Node 24.9+), so on the machine's Node 20 the tests would fail to load
 * `@nestjs/core`. TypeScript's transpiler turns them into CommonJS. Their `createRequire(import.meta.url)`
 * (optional packages, TypeORM) becomes the module's own `require`, so that what they load is the
 * sandbox's instance of a package, the one the tests see; any other `import.meta.url` the file's URL. */
const { createHash } = require('node:crypto');
const ts = require('typescript');

const OWN_REQUIRE = /\bconst require = createRequire\(import\.meta\.url\);?/g;
const CREATE_REQUIRE = /\bcreateRequire\(import\.meta\.url\)/g;
const IMPORT_META_URL = /\bimport\.meta\.url\b/g;

module.exports = {
  getCacheKey(source, path) {
    return createHash('sha256').update(ts.version).update('\0esm-to-commonjs-2\0').update(path).update('\0').update(source).digest('hex');
  },
  process(source, path) {
    const text = source
      .replace(OWN_REQUIRE, '')
      .replace(CREATE_REQUIRE, 'require')
      .replace(IMPORT_META_URL, "require('node:url').pathToFileURL(__filename).href");
    const { outputText } = ts.transpileModule(text, {
      fileName: path,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, allowJs: true, esModuleInterop: true, sourceMap: false },
    });
    return { code: outputText };
  },
};
