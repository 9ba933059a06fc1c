/** The parts of a core/v1 Pod the injector reads: a structural subset, not the whole API type. */
export interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  controller?: boolean;
}

export interface Container {
  name: string;
  ports?: { containerPort?: number; name?: string }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  restartPolicy?: string;
  [key: string]: unknown;
}

export interface Pod {
  metadata?: {
    name?: string;
    generateName?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerReference[];
  };
  spec?: {
    containers?: Container[];
    initContainers?: Container[];
    volumes?: { name: string }[];
    serviceAccountName?: string;
    automountServiceAccountToken?: boolean;
    [key: string]: unknown;
  };
}
