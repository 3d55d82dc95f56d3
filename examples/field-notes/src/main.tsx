// The page: the app under StrictMode. A hot update of App (or of the store module it imports)
// renders the new module in place; the store's open is kept (src/store.ts, docs/react.md).

import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';

const root = createRoot(document.getElementById('root') as HTMLElement);
const render = (Root: typeof App) =>
  root.render(
    <StrictMode>
      <Root />
    </StrictMode>,
  );
render(App);
import.meta.hot?.accept('./App', (next) => next && render(next.App));
