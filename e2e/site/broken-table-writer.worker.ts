// A table writer thread that dies as it starts (its script throws), so it never says it is
// ready: the adapter must write its tables on its own thread. Dedicated module worker.

throw new Error('this table writer never starts');
