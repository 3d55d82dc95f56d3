// A table writer thread that dies as it starts (its script throws): the adapter must write its
// tables on its own thread instead. Dedicated module worker.

throw new Error('this table writer never starts');
