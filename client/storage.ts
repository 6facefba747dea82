/** Where the auth session is kept between page loads: any object with these three methods. */
export interface StorageAdapter {
  getItem(key: string): string | null | Promise<string | null>;
  setItem(key: string, value: string): void | Promise<void>;
  removeItem(key: string): void | Promise<void>;
}

/** A storage adapter in memory: the session lives as long as the client. The default. */
export function memoryStorage(): StorageAdapter {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

/** The browser's `localStorage` as a storage adapter; throws where there is none. */
export function localStorageAdapter(): StorageAdapter {
  const store = (globalThis as { localStorage?: StorageAdapter }).localStorage;
  if (!store) throw new Error("localStorage is not available in this runtime");
  return {
    getItem: (key) => store.getItem(key),
    setItem: (key, value) => store.setItem(key, value),
    removeItem: (key) => store.removeItem(key),
  };
}
