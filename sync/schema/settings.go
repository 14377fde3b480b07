package schema

// Local setting keys: this machine's own state, kept in its replica file
// and never replicated. Each names the package that writes it.
const (
	SettingSelfID   = "self.id"   // app/daemon: this machine's device ID
	SettingSelfName = "self.name" // app/daemon: this machine's name
	SettingPoolID   = "pool.id"   // sync/pool: the pool this machine belongs to
	// SettingPoolSecret is reserved: no package writes it today.
	SettingPoolSecret = "pool.secret"

	SettingAlertWebhook = "alerts.webhook"    // app/alerting: the pool's webhook URL (a secret of the lab's chat)
	SettingWebhookAt    = "alerts.webhook_at" // app/alerting: RFC 3339, when an owner or admin set the webhook
	SettingAlertRules   = "alerts.rules"      // app/alerting: []alerts.Rule
	SettingAlertRulesAt = "alerts.rules_at"   // app/alerting: RFC 3339, when an owner or admin changed them
	SettingAlertMutes   = "alerts.mutes"      // app/alerting: []alerts.Mute
	SettingAlertPins    = "alerts.pins"       // app/alerting: []string, the rules this machine's owner pinned

	SettingFolders   = "folders"    // app/nodestore: the folders this machine shares
	SettingGPUHealth = "gpu-health" // app/nodestore: the health of this machine's GPUs
	SettingPolicy    = "policy"     // app/nodestore: who may launch here, and how much
	SettingJobEnv    = "job-env:"   // app/nodestore: prefix; + job ID: the job's environment
	SettingTransfers = "transfers"  // node/folders/copies: the copies under way
	SettingLaunches  = "launches"   // app: this member's latest launches (node, job ID), for the plan's share suggestion
	SettingLendUsing = "lend.using" // app/daemon: "true" while this machine's "I'm using it" switch is on
)
