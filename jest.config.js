const common = {
  moduleFileExtensions: ['js', 'json', 'ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: { isolatedModules: true } }],
    '/node_modules/.+\\.m?js$': '<rootDir>/test/support/esm-to-commonjs.js',
  },
  // NestJS 12's packages are ES modules only, and so is the content-disposition that @fastify/static (Swagger UI's
  // assets) loads: test/support/esm-to-commonjs.js makes them loadable here.
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|content-disposition)/)(?!@fastify/static/node_modules/content-disposition/)'],
  testEnvironment: 'node',
  // Other Node.js versions unpacked by .ci/run (their package.json files share a name) and the agent CLIs' install.
  modulePathIgnorePatterns: ['<rootDir>/.runtimes/', '<rootDir>/test/clients/node_modules/'],
};

module.exports = {
  testTimeout: 60000,
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  projects: [
    { ...common, displayName: 'unit', rootDir: '.', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'e2e',
      rootDir: '.',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      // Prints the fake upstream's SSE framing seed when a test fails (test/support/sse-framing.ts).
      testEnvironment: '<rootDir>/test/support/seed-environment.js',
    },
  ],
};
