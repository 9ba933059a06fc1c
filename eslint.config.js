// ESLint with type information (typescript-eslint): the checks that find real mistakes in this
// codebase (floating promises, misused promises, unsafe any, dead code); formatting is prettier's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'test/interop/go-candidate/', '.leasehold/', '.scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's it/describe return promises the runner awaits itself.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['it', 'describe', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] },
          ],
        },
      ],
      // Passing on an error of unknown type, as caught, is fine; inventing a non-Error is not.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // An async method that does not await still keeps the Promise contract of its interface
      // (a store's get/close): returning a rejected promise, never throwing synchronously.
      '@typescript-eslint/require-await': 'off',
      // Messages stay whole on one line, so they can be found with grep.
      'max-len': ['error', { code: 160, ignoreUrls: true, ignoreRegExpLiterals: true, ignoreStrings: true, ignoreTemplateLiterals: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
);
