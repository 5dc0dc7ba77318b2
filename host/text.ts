/**
 * Text cut to a length without leaving half of a surrogate pair behind: a lone surrogate is
 * not well-formed Unicode, cannot be stored byte for byte, and the ledger refuses it. Any lone
 * surrogate already in `text` (from a connector's answer, say) becomes U+FFFD.
 */
export function clip(text: string, max: number, ellipsis = ''): string {
  const whole = text.isWellFormed() ? text : text.toWellFormed();
  if (whole.length <= max) return whole;
  let cut = whole.slice(0, max);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return cut + ellipsis;
}
