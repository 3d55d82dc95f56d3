// The page: the app under StrictMode. A hot update of App, or of the store module, renders the new
// App in place. Accepting './store' here makes an edit of it run its `dispose` (the old store handle
// lets go as the re-run one joins the open: docs/react.md, HMR); through App alone it would not.

import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App';
import './store';

const root = createRoot(document.getElementById('root') as HTMLElement);
const render = (Root: typeof App) =>
  root.render(
    <StrictMode>
      <Root />
    </StrictMode>,
  );
render(App);
import.meta.hot?.accept(['./App', './store'], ([app]) => app && render(app.App));
