// Names of the Web Locks and BroadcastChannels of `tabs: 'share'`, shared by the tabs (tabs.ts)
// and the leader's worker (server.ts). Any browser context.

/** Held by the leader tab's main thread for its whole term: the election. */
export const electionLockName = (store: string): string => `memwal-tabs:${store}`;
/** Held by the leader's worker while it serves a term: freed when that worker dies or stops. */
export const termLockName = (store: string, leader: string): string => `memwal-tabs:${store}:leader:${leader}`;
/** Held by a sharing tab while it uses the store: freed when the tab closes, reloads or crashes. */
export const tabLockName = (store: string, tab: string): string => `memwal-tabs:${store}:tab:${tab}`;
/** Leader announcements and tabs' hellos (small messages only). */
export const controlChannelName = (store: string): string => `memwal-tabs:${store}`;
/** One tab's calls and their answers: only that tab and the leader's worker listen. */
export const tabChannelName = (store: string, tab: string): string => `memwal-tabs:${store}:tab:${tab}`;
