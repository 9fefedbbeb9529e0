// What a browser paired as a device keeps between visits, in IndexedDB and
// nowhere else: the device credential and the device's X25519 key pair
// (the private key a non-extractable WebCrypto key; the public one is
// public). Nothing else: no phrase (a device never sees one), no key
// bundle, no address key, no mail. Unpairing deletes the whole database.

/** The database; it exists only while this browser is paired. */
export const DEVICE_DB = 'sealpost-device';
const STORE = 'device';
const KEY = 'this';

export interface StoredDevice {
  credential: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
}

function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error ?? new Error('IndexedDB request failed'));
  });
}

function open(): Promise<IDBDatabase> {
  const r = indexedDB.open(DEVICE_DB, 1);
  r.onupgradeneeded = () => {
    if (!r.result.objectStoreNames.contains(STORE)) r.result.createObjectStore(STORE);
  };
  return request(r);
}

/**
 * The stored device, or null. Looks the database up by name first, so a
 * browser that was never paired gets no (empty) database from merely
 * loading the page.
 */
export async function loadDevice(): Promise<StoredDevice | null> {
  if (typeof indexedDB === 'undefined') return null;
  const names = (await indexedDB.databases()).map((d) => d.name);
  if (!names.includes(DEVICE_DB)) return null;
  const db = await open();
  try {
    const value = (await request(db.transaction(STORE, 'readonly').objectStore(STORE).get(KEY))) as
      | Partial<StoredDevice>
      | undefined;
    if (
      value === undefined ||
      typeof value.credential !== 'string' ||
      !(value.privateKey instanceof CryptoKey) ||
      !(value.publicKey instanceof CryptoKey)
    ) {
      return null;
    }
    return { credential: value.credential, privateKey: value.privateKey, publicKey: value.publicKey };
  } finally {
    db.close();
  }
}

/** Stores the credential and the key pair (the only record). */
export async function saveDevice(device: StoredDevice): Promise<void> {
  const db = await open();
  try {
    const tx = db.transaction(STORE, 'readwrite');
    tx.objectStore(STORE).put({ credential: device.credential, privateKey: device.privateKey, publicKey: device.publicKey }, KEY);
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error ?? new Error('IndexedDB write failed'));
      tx.onabort = () => reject(tx.error ?? new Error('IndexedDB write aborted'));
    });
  } finally {
    db.close();
  }
}

/** Deletes the database: the credential and the key are gone from this browser. */
export function forgetDevice(): Promise<void> {
  return new Promise((resolve, reject) => {
    const r = indexedDB.deleteDatabase(DEVICE_DB);
    r.onsuccess = () => resolve();
    r.onerror = () => reject(r.error ?? new Error('IndexedDB delete failed'));
    // Another tab holds it open: it is deleted once that tab lets go.
    r.onblocked = () => resolve();
  });
}
