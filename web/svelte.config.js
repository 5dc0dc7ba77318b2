/** Svelte 5 strips TypeScript in `<script lang="ts">` itself; no preprocessing needed. */
export default {
  compilerOptions: { runes: true },
};
