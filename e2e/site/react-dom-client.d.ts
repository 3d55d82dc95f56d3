// react-dom ships no types of its own and @types/react-dom is not a dependency: the one call the
// live page makes.
declare module 'react-dom/client' {
  export function createRoot(container: Element): { render(node: unknown): void; unmount(): void };
}
